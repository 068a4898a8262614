package rls

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Per-rule counters, as envoyproxy/ratelimit keeps them under
// ratelimit.service.rate_limit.<domain>.<key_path>: every descriptor that
// met a rule with a limit adds its Stats (limit.go's decide) to that rule's
// counters, named by the rule's FullKey. Descriptors without a rule, and
// unlimited rules, count nowhere, as there. Counters live as long as the
// service: a reload keeps the counts of the rules it keeps by name.

// ruleCounters are one rule's running totals.
type ruleCounters struct {
	domain, key                       string
	total, over, near, within, shadow atomic.Uint64
}

// counters maps a rule's FullKey to its *ruleCounters. A sync.Map: after a
// rule's first hit, counting is one lookup and atomic adds, no lock and no
// allocation.
type counters struct{ m sync.Map }

// add counts one descriptor's statistics against its rule in domain.
func (c *counters) add(domain string, st Status) {
	if st.Limit == nil || st.Limit.Unlimited || st.Limit.FullKey == "" {
		return
	}
	v, ok := c.m.Load(st.Limit.FullKey)
	if !ok {
		key := st.Limit.FullKey
		if len(key) > len(domain) && key[:len(domain)] == domain && key[len(domain)] == '.' {
			key = key[len(domain)+1:]
		}
		v, _ = c.m.LoadOrStore(st.Limit.FullKey, &ruleCounters{domain: domain, key: key})
	}
	r := v.(*ruleCounters)
	s := st.Stats
	r.total.Add(s.TotalHits)
	if s.OverLimit > 0 {
		r.over.Add(s.OverLimit)
	}
	if s.NearLimit > 0 {
		r.near.Add(s.NearLimit)
	}
	if s.WithinLimit > 0 {
		r.within.Add(s.WithinLimit)
	}
	if s.ShadowMode > 0 {
		r.shadow.Add(s.ShadowMode)
	}
}

// RuleStats are one rule's counters since the service started.
type RuleStats struct {
	Domain string
	// Key is the rule's path below its domain, as in envoyproxy/ratelimit's
	// statistics: key_value.key_value... ("database_users",
	// "message_type_marketing.to_number").
	Key   string
	Stats Stats
}

// RuleStats lists the counters of every rule that has been hit, ordered by
// domain then key.
func (s *Service) RuleStats() []RuleStats {
	var out []RuleStats
	s.counters.m.Range(func(_, v any) bool {
		r := v.(*ruleCounters)
		out = append(out, RuleStats{Domain: r.domain, Key: r.key, Stats: Stats{
			TotalHits: r.total.Load(), OverLimit: r.over.Load(), NearLimit: r.near.Load(),
			WithinLimit: r.within.Load(), ShadowMode: r.shadow.Load()}})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Domain != out[j].Domain {
			return out[i].Domain < out[j].Domain
		}
		return out[i].Key < out[j].Key
	})
	return out
}
