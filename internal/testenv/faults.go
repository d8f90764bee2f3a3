package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults and what the API server saw: killing and restarting components,
// and the audit log of pod creates.

// Kill SIGKILLs the component called name (Etcd, KubeAPIServer,
// APIServerName(1), …) and waits until it has exited, as a crash would end
// it. A killed API server's port refuses connections until Restart, and the
// front (Options.APIServers > 1) sends new connections to another until
// Restart has found it ready.
func (e *Env) Kill(name string) error {
	c := e.component(name)
	if c == nil {
		return fmt.Errorf("no component %s", name)
	}
	e.setServing(name, false)
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	<-c.done
	return nil
}

// Restart starts a killed component again with the same flags and data
// (an API server on the same port) and waits until it is ready (an API
// server: until it answers /readyz); it returns when it was.
func (e *Env) Restart(ctx context.Context, name string) (time.Time, error) {
	old := e.component(name)
	if old == nil {
		return time.Time{}, fmt.Errorf("no component %s", name)
	}
	if !old.exited() {
		return time.Time{}, fmt.Errorf("%s is still running; Kill it first", name)
	}
	c, err := startComponent(old.dir, old.name, old.bin, old.args, old.env)
	if err != nil {
		return time.Time{}, err
	}
	c.ready = old.ready
	for i, x := range e.comps {
		if x == old {
			e.comps[i] = c
		}
	}
	if c.ready != nil {
		if err := waitReady(ctx, c, c.ready); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

func (e *Env) component(name string) *component {
	for _, c := range e.comps {
		if c.name == name {
			return c
		}
	}
	return nil
}

// auditPolicy records pod creates only, without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods"]
- level: None
`

// auditLogPath is the audit log of the i-th API server (from 0).
func (e *Env) auditLogPath(i int) string {
	if i == 0 {
		return filepath.Join(e.Dir, "audit.log")
	}
	return filepath.Join(e.Dir, "audit-"+strconv.Itoa(i+1)+".log")
}

// PodCreate is one pod create request the API server received.
type PodCreate struct {
	Namespace, Name, UserAgent string
	// Code is the response's status code (201 created, 409 exists, …).
	Code     int
	Received time.Time
}

// PodCreates returns the pod create requests the API servers have audited
// whose user agent starts with agentPrefix (Options.AuditPodCreates), every
// API server's.
func (e *Env) PodCreates(agentPrefix string) ([]PodCreate, error) {
	var out []PodCreate
	for i := range max(len(e.URLs), 1) {
		b, err := os.ReadFile(e.auditLogPath(i))
		if err != nil {
			if i > 0 && errors.Is(err, fs.ErrNotExist) {
				continue // this server has not started yet
			}
			return nil, fmt.Errorf("reading the audit log (Options.AuditPodCreates): %w", err)
		}
		out = appendPodCreates(out, b, agentPrefix)
	}
	if len(e.URLs) > 1 {
		// One server's log is in the order responses completed; several
		// are merged by the time each request was received.
		slices.SortStableFunc(out, func(a, b PodCreate) int { return a.Received.Compare(b.Received) })
	}
	return out, nil
}

func appendPodCreates(out []PodCreate, b []byte, agentPrefix string) []PodCreate {
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Namespace, Name string
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			continue // a line cut by a kill
		}
		if strings.HasPrefix(ev.UserAgent, agentPrefix) {
			out = append(out, PodCreate{Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name,
				UserAgent: ev.UserAgent, Code: ev.ResponseStatus.Code, Received: ev.RequestReceivedTimestamp})
		}
	}
	return out
}

// SignalContainer sends sig to container of pod namespace/name running on
// the process nodes ("" is the pod's first container): SIGKILL crashes it
// (exit code 137; its restart policy decides what follows), SIGSTOP freezes
// it and SIGCONT thaws it. See procnode.Agent.Signal.
func (e *Env) SignalContainer(namespace, pod, container string, sig syscall.Signal) error {
	if e.ProcessNode == nil {
		return fmt.Errorf("signalling %s/%s: the environment has no process nodes (Options.ProcessNodes)", namespace, pod)
	}
	return e.ProcessNode.Signal(namespace, pod, container, sig)
}
