package dataflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-project/drover/internal/codec"
	"github.com/drover-project/drover/internal/funcs"
)

// TaskFunc is the name of the task function that runs dataset stages.
const TaskFunc = "drover.stage"

func init() {
	if err := funcs.Register(TaskFunc, RunTask); err != nil {
		panic(err)
	}
}

// errStop ends a producer early (Take).
var errStop = errors.New("stop")

// RunTask runs one task of a stage: it builds the partition's pipeline of
// producers, from the sources or shuffle reads to the output, and runs it.
func RunTask(ctx context.Context, ft funcs.Task, payload []byte) ([]byte, error) {
	t, st, err := decodeTask(ft.Plan, payload)
	if err != nil {
		return nil, err
	}
	m := ft.Metrics
	if m == nil {
		m = new(funcs.Metrics)
	}
	r := &runner{ctx: ctx, ft: ft, task: t, stage: st, m: m}
	if ft.Shuffle == nil && needsShuffle(st) {
		return nil, errors.New("this executor has no shuffle service")
	}
	p, err := r.build(st.Final, t.Partition)
	if err != nil {
		return nil, err
	}
	return r.output(p)
}

// countRecords adds the records p emits to *n.
func countRecords(p Producer, n *int64) Producer {
	return func(emit func([]byte) error) error {
		return p(func(rec []byte) error {
			*n++
			return emit(rec)
		})
	}
}

func needsShuffle(st *Stage) bool {
	if st.Output.Kind == WriteShuffle {
		return true
	}
	for _, n := range st.Nodes {
		if n.Kind == Shuffled {
			return true
		}
	}
	return false
}

// forEachPair runs p, whose records are pairs, and calls fn with each
// record's key and value encodings.
func forEachPair(p Producer, fn func(key, value []byte) error) error {
	return p(func(rec []byte) error {
		key, value, err := codec.SplitPair(rec)
		if err != nil {
			return err
		}
		return fn(key, value)
	})
}

type runner struct {
	ctx   context.Context
	ft    funcs.Task
	task  *Task
	stage *Stage
	m     *funcs.Metrics // never nil
}

func (r *runner) node(id int) (*Node, error) {
	n := r.stage.Nodes[id]
	if n == nil {
		return nil, fmt.Errorf("stage %d has no node %d", r.stage.ID, id)
	}
	return n, nil
}

// build returns the producer of partition p of node id.
func (r *runner) build(id, p int) (Producer, error) {
	n, err := r.node(id)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case Parallelize:
		data := r.task.Data[p]
		return func(emit func([]byte) error) error { return forEachFramed(data, emit) }, nil
	case Range:
		return rangeProducer(n, p), nil
	case TextFile:
		in, err := r.input(id, p)
		return in.Records, err
	case Func:
		in, err := r.input(n.Parent, p)
		if err != nil {
			return nil, err
		}
		t, err := transform(n.Fn, n.Mode)
		if err != nil {
			return nil, err
		}
		return t(r.ctx, r.ft, in), nil
	case Coalesce:
		if p >= len(n.Groups) {
			return nil, fmt.Errorf("coalesce node %d has no partition %d", id, p)
		}
		parents := make([]Producer, 0, len(n.Groups[p]))
		for _, q := range n.Groups[p] {
			pp, err := r.build(n.Parent, q)
			if err != nil {
				return nil, err
			}
			parents = append(parents, pp)
		}
		return func(emit func([]byte) error) error {
			for _, pp := range parents {
				if err := pp(emit); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case Shuffled:
		return r.shuffled(n, p)
	}
	return nil, fmt.Errorf("node %d has unknown kind %d", id, n.Kind)
}

// input is what a step reading partition p of node id gets.
func (r *runner) input(id, p int) (Input, error) {
	n, err := r.node(id)
	if err != nil {
		return Input{}, err
	}
	if n.Kind != TextFile {
		parent, err := r.build(id, p)
		return Input{Records: parent}, err
	}
	split, ok := r.task.Splits[id][p]
	if !ok {
		return Input{}, fmt.Errorf("text file node %d: the task carries no split %d", id, p)
	}
	if n.Format == Parquet {
		return Input{Records: countRecords(parquetRecords(r.ctx, split, n.Columns, r.ft.Store, &r.m.InputBytes), &r.m.InputRecords)}, nil
	}
	read := textLines(r.ctx, split, r.ft.Store, &r.m.InputBytes)
	if n.Format == JSONLines {
		return Input{Records: countRecords(jsonRecords(read, n.Schema, split.Path), &r.m.InputRecords)}, nil
	}
	lines := func(emit func(string) error) error {
		return read(func(line string) error {
			r.m.InputRecords++
			return emit(line)
		})
	}
	return Input{Lines: lines, Records: func(emit func([]byte) error) error {
		var rec []byte
		return lines(func(line string) error {
			rec = codec.AppendString(rec[:0], line)
			return emit(rec)
		})
	}}, nil
}
