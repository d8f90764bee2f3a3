package shuffle

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc"

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
}

// Manager owns one executor's shuffle files: it writes map outputs, serves
// them to other executors and fetches the blocks its reduce tasks need.
type Manager struct {
	opts ManagerOptions
	dir  string
	log  *slog.Logger

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool

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
	return &Manager{opts: opts, dir: dir, log: log, conns: map[string]*grpc.ClientConn{}}, nil
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
	m.mu.Lock()
	conns := m.conns
	m.conns = map[string]*grpc.ClientConn{}
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, c := range conns {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
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

// conn returns the cached client connection to address.
func (m *Manager) conn(address string) (*grpc.ClientConn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("shuffle manager is closed")
	}
	if c, ok := m.conns[address]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(address, rpc.DialOptions(m.opts.Auth)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	m.conns[address] = c
	return c, nil
}

func (m *Manager) outputBase(shuffleID, mapID int, taskID int64) string {
	return filepath.Join(m.dir, fmt.Sprintf("shuffle_%d_%d_%d", shuffleID, mapID, taskID))
}

func dataPath(base string) string  { return base + ".data" }
func indexPath(base string) string { return base + ".index" }
