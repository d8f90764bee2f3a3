// Command sort generates fixed-size records and sorts them by key, in the
// style of TeraSort: 100-byte records with a 10-byte printable key, range
// partitioned from a sample of the keys, then sorted within partitions. It
// checks that the output is ordered and that no record was lost.
//
//	go run ./examples/sort --master 'local-cluster[2,1,1024]' 1000000 8
package main

import (
	"fmt"
	"iter"
	"os"
	"strconv"
	"time"

	"github.com/drover-project/drover"
)

const (
	keySize    = 10
	recordSize = 100
)

// Record returns record i: a pseudo-random printable key (like gensort -a)
// and a value that names i, padded to the record size.
func Record(i int64) drover.KV[string, string] {
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	var key [keySize]byte
	for j := range key {
		x ^= x >> 27
		x *= 0x94D049BB133111EB
		key[j] = ' ' + byte(x>>33)%95
	}
	// The value: i in 20 decimal digits, then filler letters.
	var value [recordSize - keySize]byte
	for j, n := 19, uint64(i); j >= 0; j-- {
		value[j] = '0' + byte(n%10)
		n /= 10
	}
	for j := 20; j < len(value); j++ {
		value[j] = 'A' + byte((j-20)%26)
	}
	return drover.KV[string, string]{Key: string(key[:]), Value: string(value[:])}
}

var generate = drover.RegisterMap("sort.generate", Record)

// Summary describes one sorted partition.
type Summary struct {
	Count       int64
	First, Last string
	Ordered     bool
	Checksum    uint64 // sum of a hash of every record: independent of order
}

// Checksum is the order-independent hash of one record.
func Checksum(kv drover.KV[string, string]) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range []string{kv.Key, kv.Value} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

var summarize = drover.RegisterMapPartitions("sort.summarize",
	func(_ *drover.TaskContext, in iter.Seq[drover.KV[string, string]], emit func(Summary)) error {
		s := Summary{Ordered: true}
		for kv := range in {
			if s.Count == 0 {
				s.First = kv.Key
			} else if kv.Key < s.Last {
				s.Ordered = false
			}
			s.Last = kv.Key
			s.Count++
			s.Checksum += Checksum(kv)
		}
		emit(s)
		return nil
	})

// Sort sorts n generated records into the given number of partitions.
func Sort(ctx *drover.Context, n int64, partitions int) *drover.Dataset[drover.KV[string, string]] {
	records := drover.Map(drover.Range(ctx, 0, n, 1, partitions), generate)
	return drover.SortByKey(records, true, partitions)
}

// Check verifies partition summaries: every partition ordered, partitions
// in order, n records in all, and the checksum of records 0..n-1.
func Check(summaries []Summary, n int64) error {
	var count int64
	var sum uint64
	last := ""
	for i, s := range summaries {
		if !s.Ordered {
			return fmt.Errorf("partition %d is not sorted", i)
		}
		if s.Count > 0 {
			if s.First < last {
				return fmt.Errorf("partition %d starts at %q, before the end of the previous one (%q)", i, s.First, last)
			}
			last = s.Last
		}
		count += s.Count
		sum += s.Checksum
	}
	if count != n {
		return fmt.Errorf("sorted %d records, want %d", count, n)
	}
	var want uint64
	for i := range n {
		want += Checksum(Record(i))
	}
	if sum != want {
		return fmt.Errorf("checksum of the sorted records %x differs from the input's %x", sum, want)
	}
	return nil
}

func run(ctx *drover.Context) error {
	args := ctx.Args()
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("usage: sort <records> [partitions]")
	}
	n, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("records: expected a non-negative integer, got %q", args[0])
	}
	partitions := ctx.DefaultParallelism()
	if len(args) == 2 {
		if partitions, err = strconv.Atoi(args[1]); err != nil || partitions < 1 {
			return fmt.Errorf("partitions: expected a positive integer, got %q", args[1])
		}
	}
	start := time.Now()
	summaries, err := drover.MapPartitions(Sort(ctx, n, partitions), summarize).Collect()
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := Check(summaries, n); err != nil {
		return err
	}
	mb := float64(n*recordSize) / 1e6
	fmt.Fprintf(os.Stdout, "sorted %d records (%.0f MB) into %d partitions in %s (%.1f MB/s); output verified\n",
		n, mb, partitions, elapsed.Round(time.Millisecond), mb/elapsed.Seconds())
	return nil
}

func main() { drover.Main(run) }
