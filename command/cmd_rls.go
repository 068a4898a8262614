package command

import (
	"errors"
	"fmt"
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// RL.SHOULD: Envoy's rate limit service from RESP, so redis-cli can try a
// rule of rls-config-dir. The service itself (rules, fixed windows) is
// package rls; the command layer reaches it through EnvoyRLS, which the
// node sets.

// EnvoyRLS answers one descriptor of a domain as Envoy's rate limit service
// would answer a ShouldRateLimit request carrying it.
type EnvoyRLS interface {
	// ShouldRateLimit charges hits (0: a check that charges nothing) to
	// the descriptor entries of domain at now (Unix ns), as the ACL user
	// user: its charges run RLS.CHARGE (cmd_rls_charge.go) as that user.
	ShouldRateLimit(user, domain string, entries []RLSEntry, hits uint64, now int64) (RLSStatus, error)
	// RuleStats lists the counters of every rule hit since start, ordered
	// by domain then key.
	RuleStats() []RLSRuleStats
}

// RLSRuleStats are one rule's counters, as envoyproxy/ratelimit names them
// under ratelimit.service.rate_limit.<Domain>.<Key>.
type RLSRuleStats struct {
	Domain, Key                                              string
	TotalHits, OverLimit, NearLimit, WithinLimit, ShadowMode uint64
}

// RLSEntry is one key/value pair of a descriptor.
type RLSEntry struct{ Key, Value string }

// RLSStatus is one descriptor's answer.
type RLSStatus struct {
	Over        bool // OVER_LIMIT (never for a rule in shadow mode)
	OverallOver bool // the request's overall code OVER_LIMIT (never in rls-shadow-mode)
	// HasLimit: a rule with a limit applied (no rule, or an unlimited one,
	// have no current_limit and no duration_until_reset).
	HasLimit        bool
	RequestsPerUnit uint32
	Remaining       uint32 // 4294967295 for an unlimited rule
	ResetAfter      int64  // whole seconds until the window ends
}

var errNoRLS = errors.New("the Envoy rate limit service is not available on this server")

func registerRLS(t *Table) {
	registerRLSCharge(t)
	t.registerInfo("rls", -1, infoRLS)
	t.Register(&Command{Name: "rl.should", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagNoMulti,
		Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of entries",
		Summary: "Asks Envoy's rate limit service (rls-config-dir's rules) about one descriptor, charging HITS (default 1, 0 only checks): " +
			"[overall_code, code, current_limit, limit_remaining, duration_until_reset]; codes are OK or OVER_LIMIT, " +
			"current_limit is requests_per_unit and duration_until_reset whole seconds, both nil without a limiting rule.",
		Syntax: "domain key value [key value ...] [HITS hits]", Handler: cmdRLShould,
		Peek: func(args [][]byte) bool {
			hits, _, err := rlShouldHits(args)
			return err == nil && hits == 0
		}})
}

// rlShouldHits reads RL.SHOULD's arguments after the domain: the last
// two are HITS n when at least one pair comes before them, so a
// descriptor whose only key is "hits" still works.
func rlShouldHits(args [][]byte) (hits uint64, entries [][]byte, err error) {
	rest := args[2:]
	if n := len(rest); n >= 4 && EqualFold(rest[n-2], "hits") {
		h, err := ParseAtLeast(rest[n-1], 0, "hits")
		if err != nil {
			return 0, nil, err
		}
		return uint64(h), rest[:n-2], nil
	}
	return 1, rest, nil
}

// cmdRLShould answers RL.SHOULD domain key value [key value ...] [HITS n].
func cmdRLShould(c *Client, args [][]byte) {
	hits, rest, err := rlShouldHits(args)
	if err != nil {
		c.Error(err)
		return
	}
	if len(rest)%2 != 0 {
		c.Error(ErrSyntax)
		return
	}
	svc := c.srv.EnvoyRLS
	if svc == nil {
		c.Errf("%v", errNoRLS)
		return
	}
	entries := make([]RLSEntry, len(rest)/2)
	for i := range entries {
		entries[i] = RLSEntry{Key: string(rest[2*i]), Value: string(rest[2*i+1])}
	}
	user := c.user
	if user == "" {
		user = "default"
	}
	st, err := svc.ShouldRateLimit(user, string(args[1]), entries, hits, c.Now())
	if err != nil {
		c.Err(rlsErrorReply(err))
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

// rlsErrorReply is the Redis error of the service's refusal: the store's
// own (OOM, NOPERM, READONLY, MOVED...) keeps its code, anything else is
// an ERR.
func rlsErrorReply(err error) string {
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

// infoRLS is INFO rls: one line per rule hit since start, named
// rls_<domain>.<key> after envoyproxy/ratelimit's statistic
// (ratelimit.service.rate_limit.<domain>.<key>), with its five counters.
// It is left out of the default INFO: a rules directory can hold many
// rules.
func infoRLS(s *Server, _ *engine.Engine, b *strings.Builder) {
	if s.EnvoyRLS == nil {
		return
	}
	for _, r := range s.EnvoyRLS.RuleStats() {
		fmt.Fprintf(b, "rls_%s.%s:total_hits=%d,over_limit=%d,near_limit=%d,within_limit=%d,shadow_mode=%d\r\n",
			r.Domain, r.Key, r.TotalHits, r.OverLimit, r.NearLimit, r.WithinLimit, r.ShadowMode)
	}
}
