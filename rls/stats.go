package rls

import (
	"regexp"
	"sort"
	"strings"
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
	if st.Limit == nil || st.Limit.Unlimited {
		return
	}
	full := st.StatsKey
	if full == "" {
		full = st.Limit.FullKey
	}
	if full == "" {
		return
	}
	v, ok := c.m.Load(full)
	if !ok {
		key := full
		if len(key) > len(domain) && key[:len(domain)] == domain && key[len(domain)] == '.' {
			key = key[len(domain)+1:]
		}
		v, _ = c.m.LoadOrStore(full, &ruleCounters{domain: domain, key: statName(key)})
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

// statName makes a statistic's name as envoyproxy/ratelimit does before
// publishing it: ':' and '|' become '_', and so do the dots of an IPv4
// address (a detailed_metric rule on remote_address names
// "remote_address_10_0_0_1").
func statName(s string) string {
	s = strings.NewReplacer(":", "_", "|", "_").Replace(s)
	// Dotted quads, whose dots would read as levels of a name. Compiled
	// per call: a name is made once per rule (or value), at its first hit.
	ipv4 := regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)
	return ipv4.ReplaceAllStringFunc(s, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}

// RuleStats are one rule's counters since the service started.
type RuleStats struct {
	Domain string
	// Key is the rule's path below its domain, as in envoyproxy/ratelimit's
	// statistics: key_value.key_value... ("database_users",
	// "message_type_marketing.to_number"), made a statistic's name by
	// statName.
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
