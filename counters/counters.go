// Package counters holds named uint64 counters that explain what a stack did:
// tcp.* for the transport, tcp.hystart.* for slow start, nic.* for the links.
//
// A Registry belongs to one stack (there is no required global); a Counter is
// an atomic word, so incrementing one on the per-segment path costs one atomic
// add. A nil *Counter is valid and counts nothing, so optional instrumentation
// needs no branches at the call site.
package counters

import (
	"errors"
	"expvar"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrBadName reports a counter name that is not dotted lower case.
var ErrBadName = errors.New("counters: name must be dotted lower case ([a-z0-9-] words joined by '.')")

// ErrNoDoc reports a counter registered without its one-line doc.
var ErrNoDoc = errors.New("counters: a counter needs a one-line doc")

// ErrDocMismatch reports a second registration of a name with another doc.
var ErrDocMismatch = errors.New("counters: name already registered with another doc")

// Counter is one named monotonically increasing value (or, with Max, a
// high-water mark).
type Counter struct {
	name string
	doc  string
	v    atomic.Uint64
}

// Add adds n.
func (c *Counter) Add(n uint64) {
	if c != nil {
		c.v.Add(n)
	}
}

// Inc adds one.
func (c *Counter) Inc() {
	if c != nil {
		c.v.Add(1)
	}
}

// Max raises the value to v if v is larger: a high-water mark.
func (c *Counter) Max(v uint64) {
	if c == nil {
		return
	}
	for {
		old := c.v.Load()
		if v <= old || c.v.CompareAndSwap(old, v) {
			return
		}
	}
}

// Load returns the current value.
func (c *Counter) Load() uint64 {
	if c == nil {
		return 0
	}
	return c.v.Load()
}

// Name returns the dotted name.
func (c *Counter) Name() string { return c.name }

// Doc returns the one-line doc.
func (c *Counter) Doc() string { return c.doc }

// Registry is a set of counters, usually one per stack.
type Registry struct {
	mu     sync.Mutex
	byName map[string]*Counter
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: make(map[string]*Counter)}
}

// ValidName reports whether name is dotted lower case: one or more words of
// [a-z0-9-], starting with a letter, joined by single dots.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for _, w := range strings.Split(name, ".") {
		if w == "" || w[0] < 'a' || w[0] > 'z' {
			return false
		}
		for i := 0; i < len(w); i++ {
			ch := w[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
				return false
			}
		}
	}
	return true
}

// Register returns the counter called name, creating it with doc. Registering
// an existing name with the same doc returns the existing counter, so two
// connections or two links can share one.
func (r *Registry) Register(name, doc string) (*Counter, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%w: %q", ErrBadName, name)
	}
	doc = strings.TrimSpace(doc)
	if doc == "" || strings.ContainsRune(doc, '\n') {
		return nil, fmt.Errorf("%w: %q", ErrNoDoc, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.byName[name]; ok {
		if c.doc != doc {
			return nil, fmt.Errorf("%w: %q", ErrDocMismatch, name)
		}
		return c, nil
	}
	c := &Counter{name: name, doc: doc}
	r.byName[name] = c
	return c, nil
}

// MustRegister is Register for names and docs fixed in the source; it panics
// on an error, which can only be a programming mistake there.
func (r *Registry) MustRegister(name, doc string) *Counter {
	c, err := r.Register(name, doc)
	if err != nil {
		panic(err)
	}
	return c
}

// Lookup returns the counter called name, or nil.
func (r *Registry) Lookup(name string) *Counter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byName[name]
}

// Counters returns every counter, sorted by name.
func (r *Registry) Counters() []*Counter {
	r.mu.Lock()
	out := make([]*Counter, 0, len(r.byName))
	for _, c := range r.byName {
		out = append(out, c)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Snapshot is the values of a registry at one moment, by name.
type Snapshot map[string]uint64

// Snapshot reads every counter.
func (r *Registry) Snapshot() Snapshot {
	s := make(Snapshot)
	for _, c := range r.Counters() {
		s[c.name] = c.Load()
	}
	return s
}

// Diff returns s minus earlier, name by name. A counter absent from earlier
// counts from zero; a value that went down (a high-water mark reset, or
// snapshots passed in the wrong order) is reported as zero, not wrapped.
func (s Snapshot) Diff(earlier Snapshot) Snapshot {
	d := make(Snapshot, len(s))
	for name, v := range s {
		if e := earlier[name]; v >= e {
			d[name] = v - e
		} else {
			d[name] = 0
		}
	}
	return d
}

// Names returns the snapshot's names, sorted.
func (s Snapshot) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteText writes "name value" lines sorted by name.
func (s Snapshot) WriteText(w io.Writer) error {
	for _, n := range s.Names() {
		if _, err := fmt.Fprintf(w, "%s %d\n", n, s[n]); err != nil {
			return err
		}
	}
	return nil
}

// String is the text dump.
func (s Snapshot) String() string {
	var b strings.Builder
	_ = s.WriteText(&b)
	return b.String()
}

// WriteText writes the registry's current values as "name value" lines.
func (r *Registry) WriteText(w io.Writer) error { return r.Snapshot().WriteText(w) }

// PrometheusName maps a dotted name to a Prometheus metric name, with an
// optional prefix: dots and dashes become underscores.
func PrometheusName(prefix, name string) string {
	n := strings.NewReplacer(".", "_", "-", "_").Replace(name)
	if prefix != "" {
		n = prefix + "_" + n
	}
	return n
}

// WritePrometheus writes the registry in the Prometheus text exposition
// format (version 0.0.4), every counter with its doc as the HELP line.
func (r *Registry) WritePrometheus(w io.Writer, prefix string) error {
	for _, c := range r.Counters() {
		pn := PrometheusName(prefix, c.name)
		doc := strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(c.doc)
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", pn, doc, pn, pn, c.Load()); err != nil {
			return err
		}
	}
	return nil
}

// Publish exposes the registry through expvar under name, as a map from
// counter name to value read at each request. expvar names are global to the
// process: publishing a name twice returns an error instead of expvar's panic.
func (r *Registry) Publish(name string) error {
	if expvar.Get(name) != nil {
		return fmt.Errorf("counters: expvar name %q is already published", name)
	}
	expvar.Publish(name, expvar.Func(func() any { return map[string]uint64(r.Snapshot()) }))
	return nil
}
