package shuffle

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/rpc"
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Dir is the parent local directory (spark.local.dir); "" means
	// os.TempDir(). The manager creates its own unique subdirectory in it and
	// removes it on Close.
	Dir        string
	ExecutorID executorid.ID
	// Address is the host:port where this executor's gRPC server, which
	// serves ServeBlocks, listens.
	Address string
	// Auth is the application's secret, for the clients that fetch blocks
	// from other executors.
	Auth   rpc.Auth
	Logger *slog.Logger
	// MaxPeerConnections bounds the client connections to other executors
	// kept open (drover.shuffle.maxPeerConnections when ≤ 0), and
	// PeerIdleTimeout closes those unused that long (spark.network.timeout
	// when ≤ 0).
	MaxPeerConnections int
	PeerIdleTimeout    time.Duration
	Clock              clock.PassiveClock
}

// Manager owns one executor's shuffle files: it writes map outputs, serves
// them to other executors and fetches the blocks its reduce tasks need.
type Manager struct {
	opts ManagerOptions
	dir  string
	log  *slog.Logger

	peers *peerConns

	heldMu sync.Mutex
	held   map[heldKey]HeldOutput // the committed map outputs kept with their lineage

	// dialOptions (tests) are added to the peer connections' options.
	dialOptions []grpc.DialOption
	// fetchObserve, when set (tests), is called with the bytes fetched and
	// not yet consumed every time that amount grows.
	fetchObserve func(int64)
}

// NewManager creates the manager's directory under opts.Dir.
func NewManager(opts ManagerOptions) (*Manager, error) {
	parent := opts.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("shuffle: create local dir: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "drover-shuffle-")
	if err != nil {
		return nil, fmt.Errorf("shuffle: create local dir: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxPeerConnections <= 0 {
		opts.MaxPeerConnections = config.ShuffleMaxPeerConnections.Get(config.New())
	}
	if opts.PeerIdleTimeout <= 0 {
		opts.PeerIdleTimeout = config.NetworkTimeout.Get(config.New())
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &Manager{opts: opts, dir: dir, log: log, held: map[heldKey]HeldOutput{}}
	m.peers = &peerConns{clock: opts.Clock, limit: opts.MaxPeerConnections, idleTimeout: opts.PeerIdleTimeout,
		dial: m.dial, peers: map[string]*peerConn{}}
	return m, nil
}

// SetPeerLimits changes the bound on peer connections and their idle
// timeout (an executor learns them from the driver after it started its
// manager). Values ≤ 0 leave a setting as it is; connections over a lowered
// bound are closed as they become unused and new peers need room.
func (m *Manager) SetPeerLimits(maxConns int, idleTimeout time.Duration) {
	p := m.peers
	p.mu.Lock()
	if maxConns > 0 {
		p.limit = maxConns
	}
	if idleTimeout > 0 {
		p.idleTimeout = idleTimeout
	}
	p.mu.Unlock()
}

// Dir returns the manager's own directory.
func (m *Manager) Dir() string { return m.dir }

// ExecutorID returns the ID of the executor the manager belongs to.
func (m *Manager) ExecutorID() executorid.ID { return m.opts.ExecutorID }

// Address returns the address other executors fetch this one's blocks from.
func (m *Manager) Address() string { return m.opts.Address }

// Close closes the cached client connections and removes the directory with
// all map outputs. It is safe to call more than once.
func (m *Manager) Close() error {
	var errs []error
	if err := m.peers.closeAllPeers(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(m.dir); err != nil {
		errs = append(errs, fmt.Errorf("shuffle: remove local dir: %w", err))
	}
	return errors.Join(errs...)
}

// RemoveShuffles deletes this executor's map outputs of the given shuffles
// (their data and index files, and the temporary files of writes in
// progress) and returns how many files it removed.
func (m *Manager) RemoveShuffles(ids ...int) (int, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return 0, fmt.Errorf("shuffle: listing %s: %w", m.dir, err)
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[fmt.Sprintf("shuffle_%d_", id)] = true
	}
	m.heldMu.Lock()
	for k := range m.held {
		if slices.Contains(ids, k.shuffleID) {
			delete(m.held, k)
		}
	}
	m.heldMu.Unlock()
	removed := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		prefix, ok := shufflePrefix(name)
		if !ok || !want[prefix] {
			continue
		}
		if err := os.Remove(filepath.Join(m.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// HeldOutput is a committed map output and the lineage fingerprint of
// its shuffle.
type HeldOutput struct {
	Lineage string
	Status  MapStatus
}

type heldKey struct {
	shuffleID, mapID int
	taskID           int64
}

// Keep records a committed map output under its shuffle's lineage, for
// Held. Outputs whose shuffle has no lineage are not kept: they cannot be
// named to another driver.
func (m *Manager) Keep(lineage string, st MapStatus) {
	if lineage == "" {
		return
	}
	m.heldMu.Lock()
	m.held[heldKey{st.ShuffleID, st.MapID, st.TaskID}] = HeldOutput{Lineage: lineage, Status: st}
	m.heldMu.Unlock()
}

// Held returns the kept map outputs that RemoveShuffles has not removed,
// ordered by shuffle, map and task: what an executor names when it
// registers with a restarted driver.
func (m *Manager) Held() []HeldOutput {
	m.heldMu.Lock()
	out := make([]HeldOutput, 0, len(m.held))
	for _, h := range m.held {
		out = append(out, h)
	}
	m.heldMu.Unlock()
	slices.SortFunc(out, func(a, b HeldOutput) int {
		return cmp.Or(cmp.Compare(a.Status.ShuffleID, b.Status.ShuffleID), cmp.Compare(a.Status.MapID, b.Status.MapID),
			cmp.Compare(a.Status.TaskID, b.Status.TaskID))
	})
	return out
}

// shufflePrefix is "shuffle_<id>_" of a map output file's name.
func shufflePrefix(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "shuffle_")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '_')
	if i < 0 {
		return "", false
	}
	return name[:len("shuffle_")+i+1], true
}

// dial creates the client connection to a peer. gRPC's own idleness also
// drops the transport of a connection unused for the idle timeout, so one the
// sweep has not reached yet holds no socket. Called with m.peers.mu held.
func (m *Manager) dial(address string) (*grpc.ClientConn, error) {
	opts := append(rpc.DialOptions(m.opts.Auth), grpc.WithIdleTimeout(m.peers.idleTimeout))
	return grpc.NewClient(address, append(opts, m.dialOptions...)...)
}

func (m *Manager) outputBase(shuffleID, mapID int, taskID int64) string {
	return filepath.Join(m.dir, fmt.Sprintf("shuffle_%d_%d_%d", shuffleID, mapID, taskID))
}

func dataPath(base string) string  { return base + ".data" }
func indexPath(base string) string { return base + ".index" }
