package dataflow

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/parquetio"
	"github.com/drover-project/drover/internal/shuffle"
)

// Kind is what a node of the plan does.
type Kind uint8

const (
	// Parallelize reads records the driver shipped with the task.
	Parallelize Kind = iota + 1
	// Range generates the int64s of [Start, End) by Step.
	Range
	// TextFile reads the lines of a byte range of a file (as Format says).
	TextFile
	// Func applies a registered function (Fn, Mode) to its parent's records.
	Func
	// Coalesce concatenates groups of its parent's partitions.
	Coalesce
	// Shuffled reads the output of one or two shuffles and applies Reduce.
	Shuffled
)

// Mode is how a registered function is applied.
type Mode string

const (
	ModeMap           Mode = "map"
	ModeFlatMap       Mode = "flatMap"
	ModeFilter        Mode = "filter"
	ModeKeyBy         Mode = "keyBy"
	ModeMapPartitions Mode = "mapPartitions"
)

// ReduceKind is what a Shuffled node does with the records it reads.
type ReduceKind uint8

const (
	// Pass emits the shuffled values (Repartition).
	Pass ReduceKind = iota
	// Combine merges the values of each key with an Aggregation.
	Combine
	// Group emits each key with the list of its values.
	Group
	// Join pairs the values of each key in two shuffles.
	Join
	// Sort emits the records ordered by key.
	Sort
)

// KeyKind selects how keys are ordered: by the natural order of the
// decoded Go value.
type KeyKind uint8

const (
	KeyString KeyKind = iota + 1
	KeyInt
	KeyUint
	KeyFloat64
	KeyFloat32
)

// Aggregation merges values by key: Seq folds a value into an accumulator
// (map side), Comb merges two accumulators. With Seq empty, values are
// accumulators already (ReduceByKey).
type Aggregation struct {
	Seq  string
	Comb string
	Zero []byte // encoded initial accumulator, for Seq
}

// Node is one dataset of the plan.
type Node struct {
	ID            int
	Kind          Kind
	Parent        int // narrow parent, for Func and Coalesce
	NumPartitions int

	Fn   string
	Mode Mode

	Start, End, Step int64       // Range
	Splits           []FileSplit // TextFile, one per partition
	// Format is how a TextFile node's lines become records: as strings, or
	// as JSON values of the type Schema describes (executors do not know
	// the Go type).
	Format FileFormat
	Schema *codec.Schema
	// Columns are the record type's Parquet columns, for Format Parquet:
	// a task reads only theirs.
	Columns   []parquetio.Column
	Groups    [][]int      // Coalesce: the parent partitions of each partition
	Shuffles  []int        // Shuffled: ids of the shuffles read (two for Join)
	Reduce    ReduceKind   // Shuffled
	Agg       *Aggregation // Shuffled with Combine
	Sort      *SortOrder   // Shuffled with Sort
	LeftOuter bool         // Join: keep left records without a match
	ZeroRight []byte       // Join with LeftOuter: encoding of the right side's zero value
	// ByteValues is set for Group when the values are bytes: a []byte list
	// holds raw bytes, not each byte's own (uvarint) encoding.
	ByteValues bool
}

// FileFormat is the format of a file source or sink.
type FileFormat uint8

const (
	// Text is lines of text: each line a string record.
	Text FileFormat = iota
	// JSONLines is one JSON value per line.
	JSONLines
	// Parquet is a Parquet file of flat structs; a split is one row group.
	Parquet
)

// FileSplit is a byte range of a file; the lines starting in it belong to it.
type FileSplit struct {
	Path        string // a local path, or an object's s3:// URI
	Start, Size int64
	// FileSize is the whole object's size, from the driver's listing, for
	// s3:// paths: ranged reads stay within it without asking the store.
	FileSize int64
	// ETag is the object's version in the driver's listing, for s3://
	// paths: every read asks for it, so a task whose input was rewritten
	// since fails (objstore.ErrChanged) instead of reading another
	// version's bytes at the listed offsets.
	ETag string
	// ModTime is a local file's modification time in the driver's listing
	// (Unix nanoseconds), so that a rewritten input changes its dataset's
	// lineage fingerprint (internal/lineage) as an ETag does for objects.
	ModTime int64
	// Compression is the codec of a compressed file ("gzip", "zstd"),
	// read whole by one split; "" for plain files.
	Compression string
	// RowGroup is the Parquet row group a split reads.
	RowGroup int
}

// SortOrder orders keys.
type SortOrder struct {
	Kind       KeyKind
	Descending bool
}

// PartitionerKind selects how a shuffle assigns records to partitions.
type PartitionerKind uint8

const (
	HashPartitioner PartitionerKind = iota + 1
	RangePartitioner
	RoundRobin
)

// Shuffle is a shuffle dependency: the map side's last node, and how its
// records are partitioned.
type Shuffle struct {
	ID            int
	Parent        int
	NumPartitions int
	Partitioner   PartitionerKind
	Bounds        [][]byte   // RangePartitioner: encoded upper bounds, ordered by Order
	Order         *SortOrder // RangePartitioner
	MapCombine    *Aggregation
	// Side tags each value with a byte, for Join: 0 left, 1 right.
	Side int
	// Tagged is set when values carry a side byte.
	Tagged bool
	// Lineage is the shuffle's lineage fingerprint (internal/lineage),
	// set by the driver: an executor keeps it with the map outputs it
	// writes, and names them by it to a restarted driver, whose shuffle
	// ids are its own.
	Lineage string
}

// Stage is what an executor needs to run one stage's tasks: its nodes, the
// shuffles it writes or reads, and its output.
type Stage struct {
	ID       int
	Attempt  int
	Nodes    map[int]*Node
	Shuffles map[int]*Shuffle
	Final    int // node whose records are the output
	Output   Output
}

// OutputKind is what a task does with the final node's records.
type OutputKind uint8

const (
	// WriteShuffle partitions the records into shuffle files.
	WriteShuffle OutputKind = iota + 1
	// Collect returns the records (at most Limit when Limit > 0).
	Collect
	// Count returns the number of records.
	Count
	// ReduceAll folds the records with the registered function Fn.
	ReduceAll
	// Foreach calls the registered function Fn on each record.
	Foreach
	// SaveText writes the records as lines of a file in Dir.
	SaveText
	// SampleKeys returns a sample of the records' keys.
	SampleKeys
)

// Output is the output of a stage's tasks.
type Output struct {
	Kind    OutputKind
	Shuffle int    // WriteShuffle
	Fn      string // ReduceAll, Foreach
	Limit   int    // Collect
	Dir     string // SaveText: the job's temporary directory, or the output's s3:// prefix
	// Text is set when the records are strings, written as they are;
	// other records are rendered with Schema, as JSON when Format is
	// JSONLines.
	Text   bool
	Schema *codec.Schema
	Format FileFormat
	// Ext is the extension of the committed part files (".json").
	Ext string
	// Columns and Codec describe Parquet output.
	Columns []parquetio.Column
	Codec   string
	// SampleSize is the number of keys SampleKeys keeps per partition.
	SampleSize int
}

// Task is the payload of one task: the partition, the records of
// Parallelize sources, its file splits and the shuffle blocks to read. The
// stage's plan (EncodeStage) is not in it: it travels once per executor,
// as the task set's plan (funcs.Task.Plan).
type Task struct {
	Partition int
	Data      map[int][]byte                     // Parallelize partition → framed records
	Splits    map[int]map[int]FileSplit          // TextFile node → partition → its split
	Blocks    map[int]map[int][]shuffle.BlockRef // shuffle id → reduce partition → its blocks
	// MemoryBytes is the task's share of the executor's memory for
	// aggregation and sort buffers before they spill.
	MemoryBytes int64
	// MaxInFlight is spark.reducer.maxSizeInFlight.
	MaxInFlight int64
}

// EncodeStage encodes a stage once for all its tasks. A text file's splits
// are left out: each task carries its own (Task.Splits), so a stage over
// thousands of splits does not send all of them with every task.
func EncodeStage(s *Stage) ([]byte, error) {
	plan := *s
	plan.Nodes = make(map[int]*Node, len(s.Nodes))
	for id, n := range s.Nodes {
		if n.Kind == TextFile {
			c := *n
			c.Splits = nil
			n = &c
		}
		plan.Nodes[id] = n
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&plan); err != nil {
		return nil, fmt.Errorf("encoding stage %d: %w", s.ID, err)
	}
	return buf.Bytes(), nil
}

// EncodeTask encodes a task's payload.
func EncodeTask(t *Task) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(t); err != nil {
		return nil, fmt.Errorf("encoding task of partition %d: %w", t.Partition, err)
	}
	return buf.Bytes(), nil
}

// DecodeTask decodes a task's payload and its stage's plan.
func DecodeTask(plan, payload []byte) (*Task, *Stage, error) { return decodeTask(plan, payload) }

func decodeTask(plan, payload []byte) (*Task, *Stage, error) {
	var t Task
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&t); err != nil {
		return nil, nil, fmt.Errorf("decoding task: %w", err)
	}
	var s Stage
	if err := gob.NewDecoder(bytes.NewReader(plan)).Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("decoding stage: %w", err)
	}
	return &t, &s, nil
}
