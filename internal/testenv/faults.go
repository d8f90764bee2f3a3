package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Faults and what the API server saw: killing and restarting components,
// and the audit log of pod creates.

// Kill SIGKILLs the component called name (Etcd, KubeAPIServer, …) and
// waits until it has exited, as a crash would end it.
func (e *Env) Kill(name string) error {
	c := e.component(name)
	if c == nil {
		return fmt.Errorf("no component %s", name)
	}
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	<-c.done
	return nil
}

// Restart starts a killed component again with the same flags and data
// and waits until it is ready; it returns when it was.
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

func (e *Env) auditLogPath() string { return filepath.Join(e.Dir, "audit.log") }

// PodCreate is one pod create request the API server received.
type PodCreate struct {
	Namespace, Name, UserAgent string
	// Code is the response's status code (201 created, 409 exists, …).
	Code     int
	Received time.Time
}

// PodCreates returns the pod create requests the API server has audited
// whose user agent starts with agentPrefix (Options.AuditPodCreates).
func (e *Env) PodCreates(agentPrefix string) ([]PodCreate, error) {
	b, err := os.ReadFile(e.auditLogPath())
	if err != nil {
		return nil, fmt.Errorf("reading the audit log (Options.AuditPodCreates): %w", err)
	}
	var out []PodCreate
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
	return out, nil
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
