"""No-op task throughput of Dask distributed: a LocalCluster of 4 worker
processes with one thread each, like drover's local-cluster[4,1,...].
Prints one JSON object."""
import json
import sys
import time

from dask.distributed import Client, LocalCluster


def noop(x):
    return x


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with LocalCluster(n_workers=4, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.gather(client.map(noop, range(200), pure=False))  # warm-up
        start = time.perf_counter()
        client.gather(client.map(noop, range(n), pure=False))
        elapsed = time.perf_counter() - start
    print(json.dumps({"tasks": n, "seconds": elapsed, "tasks_per_s": n / elapsed}))


if __name__ == "__main__":
    main()
