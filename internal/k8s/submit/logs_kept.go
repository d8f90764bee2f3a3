package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/config"
	"github.com/drover-project/drover/internal/executorid"
	"github.com/drover-project/drover/internal/keptlog"
)

// drover logs of a process whose pod is gone: the log it kept
// (spark.driver.log.persistToDfs.enabled, internal/keptlog).

// KeptLogs says where Logs reads kept logs.
type KeptLogs struct {
	// Driver is the drivers' directory (spark.driver.log.dfsDir, or
	// --dir), where a driver in a pod also records its pod's name;
	// Executors the executors' (drover.executor.log.dfsDir, else
	// Driver). Nil when not configured.
	Driver, Executors keptlog.Sink
	// Poll is how often a followed kept log is read again;
	// keptlog.DefaultPoll when zero.
	Poll time.Duration
}

func (k KeptLogs) sink(exec executorid.ID) keptlog.Sink {
	if exec == executorid.Driver {
		return k.Driver
	}
	return k.Executors
}

// keptHint says how to point drover logs at the kept logs.
var keptHint = fmt.Sprintf("to read the log the application kept (%s=true), name where it kept it: --dir DIR (its %s) or --conf %s=DIR",
	config.DriverLogPersistToDfs.Key(), config.DriverLogDfsDir.Key(), config.DriverLogDfsDir.Key())

// LogsWithoutCluster prints the kept log id names when no cluster can be
// asked (cause says why): id is a driver pod's name, as its driver
// recorded it in o.Kept.Driver, or an application id.
func LogsWithoutCluster(ctx context.Context, id ID, o LogOptions, cause error, out io.Writer) error {
	exec, err := o.executor()
	if err != nil {
		return err
	}
	if id.Glob {
		return fmt.Errorf("%w; kept logs are found by a driver pod's name or an application id, without *", cause)
	}
	return o.readGone(ctx, id, exec, cause, true, out)
}

// readGone prints the kept log of what id names when the cluster has
// nothing of it (or cannot be asked: noCluster): id.Name is the driver
// pod's name, as the driver recorded it, else the application id.
func (o LogOptions) readGone(ctx context.Context, id ID, exec executorid.ID, cause error, noCluster bool, out io.Writer) error {
	sink := o.Kept.sink(exec)
	if sink == nil {
		return fmt.Errorf("%w; %s", cause, keptHint)
	}
	var appID string
	var err error
	if o.Kept.Driver != nil {
		appID, err = keptlog.AppOfPod(ctx, o.Kept.Driver, id.Namespace, id.Name)
		if err != nil && !errors.Is(err, keptlog.ErrNoLog) {
			return fmt.Errorf("%w; %w", cause, err)
		}
	}
	byPod := appID != ""
	// situation says what happened; whose, whose log is printed.
	var situation, whose string
	switch {
	case byPod:
		situation, whose = fmt.Sprintf("pod %s/%s is gone", id.Namespace, id.Name), "its kept log"
		if noCluster {
			situation = fmt.Sprintf("no cluster to ask (%v); driver pod %s/%s ran application %s", cause, id.Namespace, id.Name, appID)
			whose = "the driver's kept log"
		}
	default:
		appID = id.Name
		situation, whose = fmt.Sprintf("no pod of application %s is left in namespace %s", appID, id.Namespace), "its driver's kept log"
		if noCluster {
			situation = fmt.Sprintf("no cluster to ask (%v); application %s", cause, appID)
			whose = "the driver's kept log"
		}
	}
	if exec != executorid.Driver {
		whose = "the kept log of executor " + exec.String()
		if !noCluster {
			whose = "the kept log of its executor " + exec.String()
		}
	}
	// The process has ended with its pod; unknown without a cluster.
	follow := o.Follow && noCluster
	err = printKept(ctx, sink, appID, exec, o.keptRead(follow, situation+"; "+whose), out)
	switch {
	case err == nil:
		return nil
	case !byPod && errors.As(err, new(noApp)):
		// Neither a pod nor an application: say where both were sought.
		d := o.Kept.Driver
		if d == nil {
			return fmt.Errorf("%w; %w of an application %s in %s either", cause, keptlog.ErrNoLog, id.Name, sink.Path(""))
		}
		where := sink.Path("")
		if d.Path("") != where {
			where = fmt.Sprintf("%s (pods) or %s", d.Path(""), where)
		}
		return fmt.Errorf("%w; %w of a driver pod %s/%s or of an application %s in %s either",
			cause, keptlog.ErrNoLog, id.Namespace, id.Name, id.Name, where)
	case errors.Is(err, keptlog.ErrNoLog):
		return fmt.Errorf("%s; %w", situation, err)
	}
	return fmt.Errorf("%w; %w", cause, err)
}

// readKept prints the kept log of executor exec of appID, whose pod is
// gone (cause says how); why heads the notice.
func (o LogOptions) readKept(ctx context.Context, appID string, exec executorid.ID, follow bool, why string, cause error, out io.Writer) error {
	sink := o.Kept.sink(exec)
	if sink == nil {
		return fmt.Errorf("%w; %s", cause, keptHint)
	}
	if appID == "" {
		return fmt.Errorf("%w; its pod has no application id label, which its kept log is found by", cause)
	}
	err := printKept(ctx, sink, appID, exec, o.keptRead(follow, why), out)
	if errors.Is(err, keptlog.ErrNoLog) {
		return fmt.Errorf("%w; %w", cause, err)
	}
	return err
}

func (o LogOptions) keptRead(follow bool, why string) keptRead {
	return keptRead{Tail: o.tail(), Follow: follow, Poll: o.Kept.Poll, Notice: o.Notice, Why: why}
}

// keptRead says what printKept prints.
type keptRead struct {
	// Tail is the last lines printed, of all the attempts together;
	// keptlog.AllLines for all.
	Tail int
	// Follow follows the last attempt until its process closes its log.
	Follow bool
	Poll   time.Duration
	// Notice gets "drover: <Why> from <directory>:" before the log is
	// printed; nil for none.
	Notice io.Writer
	Why    string
}

// printKept prints the kept log of executor exec (or the driver) of appID
// in sink to out: every attempt, in order, each after a line
// "[drover: driver attempt N]" when there are several; of them all, the
// last r.Tail lines. Following, it prints the last attempt as it grows.
// An error wrapping keptlog.ErrNoLog says what sink keeps instead.
func printKept(ctx context.Context, sink keptlog.Sink, appID string, exec executorid.ID, r keptRead, out io.Writer) error {
	all, err := keptlog.Processes(ctx, sink, appID)
	if err != nil {
		return fmt.Errorf("reading the kept logs in %s: %w", sink.Path(""), err)
	}
	var attempts []keptlog.Process
	for _, p := range all {
		if p.Executor == exec {
			attempts = append(attempts, p)
		}
	}
	if len(attempts) == 0 {
		return noKeptLog(sink, appID, exec, all)
	}
	if r.Notice != nil {
		fmt.Fprintf(r.Notice, "drover: %s from %s:\n", r.Why, sink.Path(""))
	}
	last := len(attempts) - 1
	first, kept := 0, make([][]byte, len(attempts)) // kept[i] read already
	if r.Tail >= 0 && last > 0 {
		// The last lines may begin in an earlier attempt: count back.
		// Following, the last attempt is only counted here and read
		// again as it grows, with the lines it got in between.
		first = len(attempts)
		for i, left := last, r.Tail; i >= 0 && left > 0; i-- {
			b, err := readKept(ctx, sink, attempts[i], left)
			if err != nil {
				return err
			}
			kept[i], first, left = b, i, left-countLines(b)
		}
		if r.Follow {
			first, kept[last] = min(first, last), nil
		}
	}
	w := &lineEnds{w: out, nl: true}
	for i := first; i < len(attempts); i++ {
		if last > 0 {
			if !w.nl {
				w.Write([]byte{'\n'})
			}
			if _, err := fmt.Fprintf(w, "[drover: %s attempt %d]\n", processName(exec), attempts[i].Attempt); err != nil {
				return err
			}
		}
		if kept[i] != nil {
			if _, err := w.Write(kept[i]); err != nil {
				return err
			}
			continue
		}
		if err := copyKept(ctx, sink, attempts[i], keptlog.ReadOptions{Tail: r.Tail, Follow: r.Follow && i == last, Poll: r.Poll}, w); err != nil {
			return err
		}
	}
	return nil
}

// readKept reads the last tail lines of p's kept log.
func readKept(ctx context.Context, sink keptlog.Sink, p keptlog.Process, tail int) ([]byte, error) {
	var b bytes.Buffer
	err := copyKept(ctx, sink, p, keptlog.ReadOptions{Tail: tail}, &b)
	return b.Bytes(), err
}

// copyKept copies p's kept log to w; an interrupt while following ends it
// quietly, as for a pod's log.
func copyKept(ctx context.Context, sink keptlog.Sink, p keptlog.Process, opts keptlog.ReadOptions, w io.Writer) error {
	rd, err := keptlog.Open(ctx, sink, p, opts)
	if err != nil {
		return err
	}
	defer rd.Close()
	if _, err := io.Copy(w, rd); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("reading the kept log of %s in %s: %w", p, sink.Path(""), err)
	}
	return nil
}

// countLines counts lines, the last one's newline or not.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// noApp is noKeptLog's error when nothing is kept of the application.
type noApp struct{ error }

func (e noApp) Unwrap() error { return e.error }

// lineEnds is a writer that knows whether what went through ends a line.
type lineEnds struct {
	w  io.Writer
	nl bool
}

func (l *lineEnds) Write(b []byte) (int, error) {
	n, err := l.w.Write(b)
	if n > 0 {
		l.nl = b[n-1] == '\n'
	}
	return n, err
}

// processName is "driver" or "executor N".
func processName(exec executorid.ID) string {
	if exec == executorid.Driver {
		return "driver"
	}
	return "executor " + exec.String()
}

// noKeptLog is the error for no kept log of exec of appID in sink, which
// keeps those of all: it names what is kept instead.
func noKeptLog(sink keptlog.Sink, appID string, exec executorid.ID, all []keptlog.Process) error {
	if len(all) == 0 {
		return noApp{fmt.Errorf("%w of application %s in %s", keptlog.ErrNoLog, appID, sink.Path(""))}
	}
	var driver []string
	var executors []string
	for _, p := range all {
		if p.Executor == executorid.Driver {
			driver = append(driver, strconv.Itoa(p.Attempt))
		} else if id := p.Executor.String(); !slices.Contains(executors, id) {
			executors = append(executors, id)
		}
	}
	var there []string
	if len(driver) > 0 {
		there = append(there, fmt.Sprintf("the driver (attempts %s)", strings.Join(driver, ", ")))
	}
	if len(executors) > 0 {
		there = append(there, "executors "+strings.Join(executors, ", "))
	}
	who := "the driver"
	if exec != executorid.Driver {
		who = "executor " + exec.String()
	}
	return fmt.Errorf("%w of %s of application %s in %s (kept there: %s)",
		keptlog.ErrNoLog, who, appID, sink.Path(""), strings.Join(there, "; "))
}
