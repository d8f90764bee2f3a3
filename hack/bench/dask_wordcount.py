"""Word count of a text file with Dask bag on a LocalCluster of 2 worker
processes with one thread each, like drover's local-cluster[2,1,...].
Prints one JSON object."""
import json
import sys
import time

import dask.bag as db
from dask.distributed import Client, LocalCluster


def main():
    path = sys.argv[1]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="4GiB") as cluster, Client(cluster):
        start = time.perf_counter()
        counts = db.read_text(path, blocksize="128MiB").str.split().flatten().frequencies().compute()
        elapsed = time.perf_counter() - start
    print(json.dumps({"path": path, "words": len(counts), "seconds": elapsed}))


if __name__ == "__main__":
    main()
