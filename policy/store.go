package policy

import (
	"errors"
	"fmt"
	"log"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
)

// Source says where a policy comes from.
type Source string

// The two layers of policies: the rules file wins for every name it defines.
const (
	FromFile    Source = "file"
	FromRuntime Source = "runtime"
)

// Errors the protocol edge words for the wire.
var (
	ErrUnknown     = errors.New("unknown policy")
	ErrFileOwned   = errors.New("is defined by the rules file: change it there")
	ErrNoRulesFile = errors.New("no rules file configured")
)

// Counters are a policy's decisions since it was defined. They belong to
// the name, so changing a policy's parameters keeps them; deleting the
// policy drops them. Admitted counts requests the
// policy let through and that were charged (shadow policies' would-be
// denials included: ShadowDenied is a subset of Admitted); Denied counts
// requests it refused. A request one policy of RL.HITALL passed but another
// refused counts only as the refusing policy's denial. Peeks count nothing.
type Counters struct {
	Admitted     atomic.Int64
	Denied       atomic.Int64
	ShadowDenied atomic.Int64
}

// ResetCounters zeroes every policy's counters (CONFIG RESETSTAT).
func (s *Store) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.counters {
		c.Admitted.Store(0)
		c.Denied.Store(0)
		c.ShadowDenied.Store(0)
	}
}

// compiled is a policy ready to apply: validated, its limiter built.
type compiled struct {
	Policy
	source Source
	lim    engine.Limiter
	stats  *Counters
	glob   *globalAlg // a global policy's decision; nil for a local one
}

// Store holds the policies in effect: the rules file's, then the runtime
// ones (RL.POLICY SET) for names the file does not define. Readers (RL.HIT)
// take the current table with one atomic load; writers serialise on mu and
// publish a new table.
type Store struct {
	mu       sync.Mutex
	file     map[string]Policy
	runtime  map[string]Policy
	counters map[string]*Counters
	table    atomic.Pointer[map[string]*compiled]

	watch    watchState
	observer Observer // hit.go: SetObserver
	logger   atomic.Pointer[log.Logger]
	peers    atomic.Pointer[Peers] // global policies' other regions (global.go)
}

// NewStore returns an empty store that logs rules-file events to logger
// (log.Default() if nil).
func NewStore(logger *log.Logger) *Store {
	if logger == nil {
		logger = log.Default()
	}
	s := &Store{file: map[string]Policy{}, runtime: map[string]Policy{}, counters: map[string]*Counters{}}
	s.logger.Store(logger)
	empty := map[string]*compiled{}
	s.table.Store(&empty)
	return s
}

// SetLogger sends the store's log lines (rules file events) to logger.
func (s *Store) SetLogger(logger *log.Logger) {
	if logger != nil {
		s.logger.Store(logger)
	}
}

// lookup finds a policy in effect by name without allocating.
func (s *Store) lookup(name []byte) *compiled {
	return (*s.table.Load())[string(name)]
}

// Info is a policy in effect with where it comes from and its counters.
type Info struct {
	Policy
	Source                         Source
	Admitted, Denied, ShadowDenied int64
}

// Get returns the policy in effect under name.
func (s *Store) Get(name string) (Info, bool) {
	c := s.lookup([]byte(name))
	if c == nil {
		return Info{}, false
	}
	return c.info(), true
}

func (c *compiled) info() Info {
	return Info{Policy: c.Policy, Source: c.source,
		Admitted: c.stats.Admitted.Load(), Denied: c.stats.Denied.Load(), ShadowDenied: c.stats.ShadowDenied.Load()}
}

// List returns every policy in effect, ordered by name.
func (s *Store) List() []Info {
	t := *s.table.Load()
	out := make([]Info, 0, len(t))
	for _, c := range t {
		out = append(out, c.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Set adds or replaces a runtime policy. It refuses names the rules file
// defines (the file wins) and invalid policies.
func (s *Store) Set(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.file[p.Name]; ok {
		return fmt.Errorf("policy '%s' %w", p.Name, ErrFileOwned)
	}
	s.runtime[p.Name] = p
	s.publish()
	return nil
}

// Del removes a runtime policy and reports whether it existed. Names the
// rules file defines cannot be deleted here.
func (s *Store) Del(name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.file[name]; ok {
		return false, fmt.Errorf("policy '%s' %w", name, ErrFileOwned)
	}
	if _, ok := s.runtime[name]; !ok {
		return false, nil
	}
	delete(s.runtime, name)
	s.publish()
	return true, nil
}

// Runtime returns the runtime policies (those RL.POLICY SET made), ordered
// by name, including any the rules file currently hides: they are what a
// snapshot keeps.
func (s *Store) Runtime() []Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Policy, 0, len(s.runtime))
	for _, p := range s.runtime {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ReplaceRuntime sets the whole runtime layer at once (a snapshot being
// loaded). Every policy is validated first; on error nothing changes.
func (s *Store) ReplaceRuntime(ps []Policy) error {
	next := make(map[string]Policy, len(ps))
	for _, p := range ps {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("policy %q: %w", p.Name, err)
		}
		next[p.Name] = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runtime = next
	s.publish()
	return nil
}

// setFile replaces the rules file's layer with already validated policies.
func (s *Store) setFile(ps []Policy) {
	next := make(map[string]Policy, len(ps))
	for _, p := range ps {
		next[p.Name] = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file = next
	s.publish()
}

// publish compiles the layers into a new table; the caller holds mu. Every
// policy here was validated, so building its limiter cannot fail.
func (s *Store) publish() {
	t := make(map[string]*compiled, len(s.file)+len(s.runtime))
	add := func(p Policy, src Source) {
		lim, err := newLimiter(p)
		if err != nil {
			s.logger.Load().Printf("policy %s: %v (skipped)", p.Name, err)
			return
		}
		st := s.counters[p.Name]
		if st == nil {
			st = &Counters{}
			s.counters[p.Name] = st
		}
		c := &compiled{Policy: p, source: src, lim: lim, stats: st}
		if p.Global {
			if c.glob, err = newGlobal(p); err != nil {
				s.logger.Load().Printf("policy %s: %v (skipped)", p.Name, err)
				return
			}
		}
		t[p.Name] = c
	}
	for _, p := range s.runtime {
		if _, hidden := s.file[p.Name]; !hidden {
			add(p, FromRuntime)
		}
	}
	for _, p := range s.file {
		add(p, FromFile)
	}
	for name := range s.counters {
		if t[name] == nil {
			delete(s.counters, name) // a policy defined again starts from zero
		}
	}
	s.table.Store(&t)
}
