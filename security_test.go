package drover

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestSecureLocalCluster runs a job with a shuffle on a local cluster
// whose every connection is mutual TLS (spark.network.crypto.enabled, the
// default on Kubernetes) and, for the opt-out, none: executors register,
// receive tasks, send results and fetch each other's shuffle blocks, with
// the same counts in every mode.
func TestSecureLocalCluster(t *testing.T) {
	lines := generatedLines(3000)
	path := writeText(t, lines)
	want := referenceWordCount(lines)
	for name, conf := range map[string][]string{
		"mutual TLS":        {"spark.network.crypto.enabled=true"},
		"token (default)":   nil,
		"no authentication": {"spark.authenticate=false"},
	} {
		t.Run(name, func(t *testing.T) {
			runJob(t, "local-cluster[2,1,256]", func(ctx *Context) error {
				counts, err := ReduceByKey(FlatMap(TextFile(ctx, path), testWords), testSum, 4).Collect()
				if err != nil {
					return err
				}
				if diff := gocmp.Diff(want, countsMap(t, counts)); diff != "" {
					t.Errorf("word counts (-want +got):\n%s", diff)
				}
				return nil
			}, append(conf, "spark.files.maxPartitionBytes=7000")...)
		})
	}
}
