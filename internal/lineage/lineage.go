package lineage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/drover-project/drover/internal/dataflow"
)

// Fingerprint is a SHA-256 digest of a dataset's or a shuffle's lineage.
type Fingerprint [sha256.Size]byte

// String is the fingerprint in hex, as markers and logs write it.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// MarshalText writes the fingerprint in hex, in JSON too.
func (f Fingerprint) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a fingerprint written by MarshalText.
func (f *Fingerprint) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*f = p
	return nil
}

// IsZero reports whether f is the zero value (no fingerprint).
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

// Parse reads a fingerprint written by String.
func Parse(s string) (Fingerprint, error) {
	var f Fingerprint
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(f) {
		return f, fmt.Errorf("lineage fingerprint %q: want %d hex digits", s, 2*len(f))
	}
	copy(f[:], b)
	return f, nil
}

// Graph is what fingerprints are computed from: the plan's datasets and
// shuffles by id, and the records the driver ships for Parallelize nodes.
type Graph interface {
	Node(id int) *dataflow.Node
	Shuffle(id int) *dataflow.Shuffle
	Data(id int) [][]byte
}

// Hasher computes fingerprints over one graph, remembering those it
// computed: shared parents are hashed once however many children they
// have. A Hasher is not safe for concurrent use; the graph must not change
// the datasets it hashed.
type Hasher struct {
	g        Graph
	nodes    map[int]Fingerprint
	shuffles map[int]Fingerprint
}

// NewHasher returns a Hasher over g.
func NewHasher(g Graph) *Hasher {
	return &Hasher{g: g, nodes: map[int]Fingerprint{}, shuffles: map[int]Fingerprint{}}
}

// node is what a dataset's fingerprint covers: the node with the ids of
// what it reads replaced by their fingerprints.
type node struct {
	Node     dataflow.Node
	Parent   *Fingerprint `json:",omitempty"`
	Shuffles []Fingerprint
	Data     *Fingerprint `json:",omitempty"`
}

// Node is the fingerprint of dataset id. An id the graph does not know is
// an error, never a fingerprint that could match another.
func (h *Hasher) Node(id int) (Fingerprint, error) {
	if f, ok := h.nodes[id]; ok {
		return f, nil
	}
	n := h.g.Node(id)
	if n == nil {
		return Fingerprint{}, fmt.Errorf("lineage: no dataset %d", id)
	}
	c := node{Node: *n}
	c.Node.ID, c.Node.Parent, c.Node.Shuffles = 0, 0, nil
	switch n.Kind {
	case dataflow.Func, dataflow.Coalesce:
		p, err := h.Node(n.Parent)
		if err != nil {
			return Fingerprint{}, err
		}
		c.Parent = &p
	case dataflow.Parallelize:
		d := sha256.New()
		for _, part := range h.g.Data(id) {
			// The length first: partitions ["ab", ""] and ["a", "b"]
			// must differ.
			fmt.Fprintf(d, "%d:", len(part))
			d.Write(part)
		}
		var f Fingerprint
		d.Sum(f[:0])
		c.Data = &f
	}
	for _, sid := range n.Shuffles {
		s, err := h.Shuffle(sid)
		if err != nil {
			return Fingerprint{}, err
		}
		c.Shuffles = append(c.Shuffles, s)
	}
	f, err := digest("node", c)
	if err != nil {
		return Fingerprint{}, err
	}
	h.nodes[id] = f
	return f, nil
}

// shuffle is what a shuffle's fingerprint covers: the map side's dataset
// by its fingerprint, and how its records are partitioned.
type shuffle struct {
	Shuffle dataflow.Shuffle
	Parent  Fingerprint
}

// Shuffle is the fingerprint of shuffle id: equal fingerprints mean equal
// map outputs, so a map output of one attempt serves another.
func (h *Hasher) Shuffle(id int) (Fingerprint, error) {
	if f, ok := h.shuffles[id]; ok {
		return f, nil
	}
	s := h.g.Shuffle(id)
	if s == nil {
		return Fingerprint{}, fmt.Errorf("lineage: no shuffle %d", id)
	}
	p, err := h.Node(s.Parent)
	if err != nil {
		return Fingerprint{}, err
	}
	c := shuffle{Shuffle: *s, Parent: p}
	c.Shuffle.ID, c.Shuffle.Parent, c.Shuffle.Lineage = 0, 0, ""
	f, err := digest("shuffle", c)
	if err != nil {
		return Fingerprint{}, err
	}
	h.shuffles[id] = f
	return f, nil
}

// Output is the fingerprint of an action's output: the dataset written,
// by its fingerprint, and how (format, extension, codec), but not where.
func Output(node Fingerprint, out dataflow.Output) (Fingerprint, error) {
	out.Dir = ""
	return digest("output", struct {
		Node   Fingerprint
		Output dataflow.Output
	}{node, out})
}

// digest hashes v's JSON encoding: deterministic for these types, which
// hold no maps, and stable across builds as long as the field names are.
func digest(kind string, v any) (Fingerprint, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("lineage: encoding a %s: %w", kind, err)
	}
	d := sha256.New()
	d.Write([]byte(kind))
	d.Write([]byte{0})
	d.Write(b)
	var f Fingerprint
	d.Sum(f[:0])
	return f, nil
}
