package drover

import (
	"slices"
	"testing"
)

// Bytes are encoded on their own as uvarints but in a []byte as raw bytes:
// a group of byte values must be rebuilt, not concatenated.
func TestGroupByKeyOfBytes(t *testing.T) {
	runJob(t, "local[2]", func(ctx *Context) error {
		d := Parallelize(ctx, []KV[string, byte]{{Key: "k", Value: 200}, {Key: "k", Value: 5}, {Key: "k", Value: 7}}, 2)
		got, err := GroupByKey(d, 1).Collect()
		if err != nil {
			return err
		}
		if len(got) != 1 {
			t.Fatalf("GroupByKey = %v, want one key", got)
		}
		slices.Sort(got[0].Value)
		if !slices.Equal(got[0].Value, []byte{5, 7, 200}) {
			t.Errorf("values of k = %v, want [5 7 200]", got[0].Value)
		}
		return nil
	})
}
