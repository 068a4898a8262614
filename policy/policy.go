// Package policy owns limitdb's named limits: the policy model and its
// validation, the YAML rules file (loaded with errors that name the line and
// the field, and watched for changes), the runtime layer that RL.POLICY SET
// changes, per-policy counters, and the all-or-nothing application of
// several policies at once.
//
// A policy's state lives in the ordinary keyspace under its own key,
// Key(policy, key) = "rl:<policy>:<key>", so two policies never share state
// for the same client key, and expiry, snapshots, TYPE, PTTL and DEL work on
// policy state like on any other limiter key.
//
// policy may import engine and its algorithm packages; it must never import
// resp (the protocol edge) or persistence.
package policy

import (
	"fmt"
	"strings"
	"time"
)

// Algorithm names a limiting algorithm as the rules file spells it.
type Algorithm string

// The algorithms a policy may use.
const (
	GCRA          Algorithm = "gcra"
	TokenBucket   Algorithm = "token_bucket"
	LeakyQueue    Algorithm = "leaky_queue"
	FixedWindow   Algorithm = "fixed_window"
	SlidingWindow Algorithm = "sliding_window"
	SlidingLog    Algorithm = "sliding_log"

	// Concurrency admits at most Limit leases held at once, each for
	// Period unless released or renewed (engine.LeaseLimiter).
	Concurrency Algorithm = "concurrency"
)

// Algorithms lists every algorithm name, in the order the docs give them.
var Algorithms = []Algorithm{GCRA, TokenBucket, LeakyQueue, FixedWindow, SlidingWindow, SlidingLog,

	Concurrency,
}

// HasBurst reports whether the algorithm takes a burst (a capacity apart
// from its rate). Window algorithms admit exactly limit per period and have
// none.
func (a Algorithm) HasBurst() bool {
	return a == GCRA || a == TokenBucket || a == LeakyQueue
}

// Policy is one named limit: Limit requests per Period, with at most Burst
// admitted at once where the algorithm has a burst.
type Policy struct {
	Name      string
	Algorithm Algorithm
	Limit     int64         // requests (cost units) per period, >= 1
	Period    time.Duration // > 0
	// Burst is the most requests admitted at once from a fresh key (the
	// bucket's capacity, the reply's limit field). 0 means "unset": the
	// limit. Only algorithms with HasBurst accept it.
	Burst  int64
	Shadow bool // never deny; count would-be denials instead

	// Calendar, when its Unit is set, makes the period a calendar window
	// (a local day, ISO week, month, year or business day in a zone)
	// instead of Period, which is then 0 (calendar.go).
	Calendar CalendarPeriod

	// Global is scope: global: one limit shared with the peer regions
	// (global.go, docs/global.md); false is scope: local.
	Global bool

	// WaitReplicas is wait_replicas: the replicas that must acknowledge
	// the effect of a command on this policy before its reply leaves
	// (wait.go); 0 leaves it to the server's limiter-wait-replicas.
	WaitReplicas int
}

// Scope is the policy's scope as the rules file spells it.
func (p Policy) Scope() string {
	if p.Global {
		return "global"
	}
	return "local"
}

// EffectiveBurst is the burst the limiter uses: Burst, or Limit when unset.
func (p Policy) EffectiveBurst() int64 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit
}

// FieldError is a validation error about one field of a policy.
type FieldError struct {
	Field string // name, algorithm, limit, period, burst, shadow
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// MaxNameLen bounds a policy name.
const MaxNameLen = 128

// ValidName reports whether name may name a policy: 1 to MaxNameLen
// characters from [A-Za-z0-9_.-]. The colon is excluded so that Key is
// injective: "rl:" + name + ":" ends at the first colon after the prefix.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '-') {
			return false
		}
	}
	return true
}

// ParseAlgorithm maps a name (any case) to an algorithm.
func ParseAlgorithm(s string) (Algorithm, bool) {
	for _, a := range Algorithms {
		if strings.EqualFold(s, string(a)) {
			return a, true
		}
	}
	return "", false
}

// Validate checks every field and returns the first problem as a
// *FieldError. It also checks that the algorithm can be built with these
// parameters (no overflow), so a valid policy always applies.
func (p Policy) Validate() error {
	if !ValidName(p.Name) {
		name := p.Name
		if len(name) > MaxNameLen {
			name = name[:MaxNameLen] + "..."
		}
		return &FieldError{"name", fmt.Sprintf("%q is not a valid policy name (1 to %d characters of A-Z a-z 0-9 _ . -)", name, MaxNameLen)}
	}
	if a, ok := ParseAlgorithm(string(p.Algorithm)); !ok || a != p.Algorithm {
		return &FieldError{"algorithm", fmt.Sprintf("unknown algorithm %q (use %s)", p.Algorithm, algorithmList())}
	}
	if p.Limit < 1 {
		return &FieldError{"limit", fmt.Sprintf("must be at least 1, got %d", p.Limit)}
	}
	if err := p.validateCalendar(); err != nil {
		return err
	}
	if p.Period <= 0 && p.Calendar.Unit == 0 {
		return &FieldError{"period", "must be positive"}
	}
	if p.Burst < 0 {
		return &FieldError{"burst", fmt.Sprintf("must be at least 1, got %d", p.Burst)}
	}
	if p.Burst != 0 && !p.Algorithm.HasBurst() {
		return &FieldError{"burst", fmt.Sprintf("%s has no burst: it admits exactly limit per period", p.Algorithm)}
	}
	if _, err := newLimiter(p); err != nil {
		return &FieldError{"limit", err.Error()}
	}
	if err := p.validateGlobal(); err != nil {
		return err
	}
	if err := p.validateWait(); err != nil {
		return err
	}
	if p.Global {
		if _, err := newGlobal(p); err != nil {
			return &FieldError{"limit", err.Error()}
		}
	}
	return nil
}

func algorithmList() string {
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// Key is where policy name keeps the state of client key: "rl:name:key",
// appended to dst. Names hold no colon, so different (policy, key) pairs
// never map to the same key.
func Key(dst []byte, name string, key []byte) []byte {
	dst = append(dst, "rl:"...)
	dst = append(dst, name...)
	dst = append(dst, ':')
	return append(dst, key...)
}
