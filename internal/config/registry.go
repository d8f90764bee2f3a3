package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// registered is what the registry needs of an Entry[T].
type registered interface {
	metadata() *meta
	validate(value string) error
	defaultString(c *Conf) string
	defaultDoc() string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]registered{}
	prefixes   = map[string]*PrefixEntry{}
	relations  []func(*Conf) error
)

func registerEntry(e registered) {
	key := e.metadata().key
	if !namespaced(key) {
		panic(fmt.Sprintf("config: %s: keys must start with spark. or drover.", key))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[key]; dup {
		panic(fmt.Sprintf("config: %s registered twice", key))
	}
	registry[key] = e
}

// namespaced reports whether key is under spark. or drover., where every
// registered key and family must be.
func namespaced(key string) bool {
	return strings.HasPrefix(key, "spark.") || strings.HasPrefix(key, "drover.")
}

func lookupEntry(key string) (registered, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	e, ok := registry[key]
	return e, ok
}

// known reports whether key has an entry or belongs to a registered prefix
// family.
func known(key string) bool {
	if _, ok := lookupEntry(key); ok {
		return true
	}
	return prefixFor(key) != nil
}

func prefixFor(key string) *PrefixEntry {
	registryMu.RLock()
	defer registryMu.RUnlock()
	for p, e := range prefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return e
		}
	}
	return nil
}

func registeredKeys() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

// Relation registers a rule that relates several keys, such as
// minExecutors ≤ maxExecutors. Validate runs the rules once every set key is
// valid on its own; a rule returns nil or an error that names the keys and
// their values.
func Relation(rule func(c *Conf) error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	relations = append(relations, rule)
}

func allRelations() []func(*Conf) error {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(relations)
}

// PrefixEntry is a family of keys that share a prefix and carry free-form
// names, such as spark.executorEnv.<NAME>. Keys of a registered family are
// known keys.
type PrefixEntry struct {
	prefix, name, doc string
}

// Prefix registers a family of keys: prefix ends with a dot, and name is
// how the docs show the free part, such as "NAME".
func Prefix(prefix, name, doc string) *PrefixEntry {
	if !strings.HasSuffix(prefix, ".") || !namespaced(prefix) {
		panic(fmt.Sprintf("config: prefix %s must start with spark. or drover. and end with a dot", prefix))
	}
	p := &PrefixEntry{prefix: prefix, name: name, doc: doc}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := prefixes[prefix]; dup {
		panic(fmt.Sprintf("config: prefix %s registered twice", prefix))
	}
	prefixes[prefix] = p
	return p
}

// Prefix returns the family's prefix, such as "spark.executorEnv.".
func (p *PrefixEntry) Prefix() string { return p.prefix }

// Doc returns the family's documentation.
func (p *PrefixEntry) Doc() string { return p.doc }

// Values returns the family's keys set in c, without the prefix.
func (p *PrefixEntry) Values(c *Conf) map[string]string {
	out := map[string]string{}
	for k, v := range c.Explicit() {
		if name, ok := strings.CutPrefix(k, p.prefix); ok && name != "" {
			out[name] = v
		}
	}
	return out
}
