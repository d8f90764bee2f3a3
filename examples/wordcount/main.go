// Command wordcount counts the words of text files and prints the most
// frequent ones, like Spark's JavaWordCount: lines are split into words
// and counted with a map-side combine before the shuffle.
//
//	go run ./examples/wordcount --master 'local-cluster[2,1,1024]' README.md 10
//
// A third argument saves every word's count there ("word<TAB>count" lines,
// written by the executors), such as s3://bucket/counts.
package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/drover-project/drover"
)

// words emits each whitespace-separated word of a line with a count of 1.
// The words are substrings of the line: no allocation per word.
var words = drover.RegisterFlatMap("wordcount.words", func(line string, emit func(drover.KV[string, int])) {
	start := -1
	for i := 0; i < len(line); i++ {
		if isSpace(line[i]) {
			if start >= 0 {
				emit(drover.KV[string, int]{Key: line[start:i], Value: 1})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		emit(drover.KV[string, int]{Key: line[start:], Value: 1})
	}
})

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

var sum = drover.RegisterReduce("wordcount.sum", func(a, b int) int { return a + b })

var format = drover.RegisterMap("wordcount.format", func(kv drover.KV[string, int]) string {
	return kv.Key + "\t" + strconv.Itoa(kv.Value)
})

// Count returns the count of every word of the files path names.
func Count(ctx *drover.Context, path string) ([]drover.KV[string, int], error) {
	return counts(ctx, path).Collect()
}

func counts(ctx *drover.Context, path string) *drover.Dataset[drover.KV[string, int]] {
	return drover.ReduceByKey(drover.FlatMap(drover.TextFile(ctx, path), words), sum, 0)
}

// Top orders counts by decreasing count, then by word, and keeps n.
func Top(counts []drover.KV[string, int], n int) []drover.KV[string, int] {
	slices.SortFunc(counts, func(a, b drover.KV[string, int]) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.Key, b.Key))
	})
	return counts[:min(n, len(counts))]
}

func run(ctx *drover.Context) error {
	args := ctx.Args()
	if len(args) < 1 || len(args) > 3 {
		return fmt.Errorf("usage: wordcount <file, directory or glob> [number of words to print, default 20] [output directory]")
	}
	n := 20
	if len(args) >= 2 {
		var err error
		if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
			return fmt.Errorf("number of words: expected a positive integer, got %q", args[1])
		}
	}
	all := counts(ctx, args[0])
	if len(args) == 3 {
		// The collect below reads the same shuffle: its map stage runs once.
		if err := drover.Map(all, format).SaveAsTextFile(args[2]); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wordcount: saved the counts to %s\n", args[2])
	}
	got, err := all.Collect()
	if err != nil {
		return err
	}
	for _, kv := range Top(got, n) {
		fmt.Fprintf(os.Stdout, "%s\t%d\n", kv.Key, kv.Value)
	}
	return nil
}

func main() { drover.Main(run) }
