// Package envoy is the family of Envoy's rate limit service's commands:
// RL.SHOULD, which asks the service about one descriptor from RESP so
// that redis-cli can try a rule of rls-config-dir; RLS.CHARGE, through
// which the service writes its counters; and INFO rls, the counters of
// every rule hit since start. The service itself (rules, fixed windows,
// gRPC and HTTP) is package rls, which the node builds and hands the
// family as a Service; the family owns RLS.CHARGE's cache of parsed rules.
//
// It imports the command core, the engine and rls; never another family,
// the transport or the assembly.
package envoy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/rls"
)

// Service answers one descriptor of a domain as Envoy's rate limit service
// would answer a ShouldRateLimit request carrying it. Any goroutine may
// call it.
type Service interface {
	// ShouldRateLimit charges hits (0: a check that charges nothing) to
	// the descriptor entries of domain at now (Unix ns), as the ACL user
	// user: its charges run RLS.CHARGE as that user. An error's text is
	// the refusal RL.SHOULD answers: one that starts with an upper-case
	// code (OOM, NOPERM, READONLY, MOVED...) keeps it, any other is an
	// ERR.
	ShouldRateLimit(user, domain string, entries []Entry, hits uint64, now int64) (Status, error)
	// RuleStats lists the counters of every rule hit since start, ordered
	// by domain then key.
	RuleStats() []rls.RuleStats
}

// Entry is one key/value pair of a descriptor.
type Entry struct{ Key, Value string }

// Status is one descriptor's answer.
type Status struct {
	Over        bool // OVER_LIMIT (never for a rule in shadow mode)
	OverallOver bool // the request's overall code OVER_LIMIT (never in rls-shadow-mode)
	// HasLimit: a rule with a limit applied (no rule, or an unlimited one,
	// have no current_limit and no duration_until_reset).
	HasLimit        bool
	RequestsPerUnit uint32
	Remaining       uint32 // 4294967295 for an unlimited rule
	ResetAfter      int64  // whole seconds until the window ends
}

// Family is RL.SHOULD, RLS.CHARGE and INFO rls.
type Family struct {
	svc   Service
	rules *rls.RuleCache // RLS.CHARGE's parsed rules, this family's own
}

// New returns the family answering RL.SHOULD and INFO rls from svc. With
// a nil svc, RL.SHOULD answers an error and INFO rls is empty; RLS.CHARGE
// needs no service.
func New(svc Service) *Family { return &Family{svc: svc, rules: rls.NewRuleCache()} }

var errNoRLS = errors.New("the Envoy rate limit service is not available on this server")

// Register adds RL.SHOULD, RLS.CHARGE and INFO rls to t. INFO rls is
// shown only when asked for by name or with "all", among the hidden
// sections in the order families register them.
func (f *Family) Register(t *command.Table, _ command.Env) {
	f.registerCharge(t)
	t.AddInfo("rls", -1, f.info)
	t.Register(&command.Command{Name: "rl.should", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoMulti,
		Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of entries",
		Summary: "Asks Envoy's rate limit service (rls-config-dir's rules) about one descriptor, charging HITS (default 1, 0 only checks): " +
			"[overall_code, code, current_limit, limit_remaining, duration_until_reset]; codes are OK or OVER_LIMIT, " +
			"current_limit is requests_per_unit and duration_until_reset whole seconds, both nil without a limiting rule.",
		Syntax: "domain key value [key value ...] [HITS hits]", Handler: f.cmdShould,
		Peek: func(args [][]byte) bool {
			hits, _, err := shouldHits(args)
			return err == nil && hits == 0
		}})
}

// shouldHits reads RL.SHOULD's arguments after the domain: the last
// two are HITS n when at least one pair comes before them, so a
// descriptor whose only key is "hits" still works.
func shouldHits(args [][]byte) (hits uint64, entries [][]byte, err error) {
	rest := args[2:]
	if n := len(rest); n >= 4 && command.EqualFold(rest[n-2], "hits") {
		h, err := command.ParseAtLeast(rest[n-1], 0, "hits")
		if err != nil {
			return 0, nil, err
		}
		return uint64(h), rest[:n-2], nil
	}
	return 1, rest, nil
}

// cmdShould answers RL.SHOULD domain key value [key value ...] [HITS n].
func (f *Family) cmdShould(c *command.Client, args [][]byte) {
	hits, rest, err := shouldHits(args)
	if err != nil {
		c.Error(err)
		return
	}
	if len(rest)%2 != 0 {
		c.Error(command.ErrSyntax)
		return
	}
	if f.svc == nil {
		c.Errf("%v", errNoRLS)
		return
	}
	entries := make([]Entry, len(rest)/2)
	for i := range entries {
		entries[i] = Entry{Key: string(rest[2*i]), Value: string(rest[2*i+1])}
	}
	st, err := f.svc.ShouldRateLimit(c.User(), string(args[1]), entries, hits, c.Now())
	if err != nil {
		c.Err(errorReply(err))
		return
	}
	code := func(over bool) string {
		if over {
			return "OVER_LIMIT"
		}
		return "OK"
	}
	c.Array(5)
	c.Simple(code(st.OverallOver)) // its descriptor's, but OK in rls-shadow-mode
	c.Simple(code(st.Over))
	if st.HasLimit {
		c.Int(int64(st.RequestsPerUnit))
	} else {
		c.Null()
	}
	c.Int(int64(st.Remaining))
	if st.HasLimit {
		c.Int(st.ResetAfter)
	} else {
		c.Null()
	}
}

// errorReply is the Redis error of the service's refusal: the store's
// own (OOM, NOPERM, READONLY, MOVED...) keeps its code, anything else is
// an ERR.
func errorReply(err error) string {
	msg := err.Error()
	code, _, _ := strings.Cut(msg, " ")
	if len(code) < 2 {
		return "ERR " + msg
	}
	for _, r := range code {
		if r < 'A' || r > 'Z' {
			return "ERR " + msg
		}
	}
	return msg
}

// info is INFO rls: one line per rule hit since start, named
// rls_<domain>.<key> after envoyproxy/ratelimit's statistic
// (ratelimit.service.rate_limit.<domain>.<key>), with its five counters.
// It is left out of the default INFO: a rules directory can hold many
// rules.
func (f *Family) info(_ *engine.Engine, b *strings.Builder) {
	if f.svc == nil {
		return
	}
	for _, r := range f.svc.RuleStats() {
		st := r.Stats
		fmt.Fprintf(b, "rls_%s.%s:total_hits=%d,over_limit=%d,near_limit=%d,within_limit=%d,shadow_mode=%d\r\n",
			r.Domain, r.Key, st.TotalHits, st.OverLimit, st.NearLimit, st.WithinLimit, st.ShadowMode)
	}
}
