// Package rls is Envoy's rate limit service (RLS v3) served from limitdb's
// own keyspace: envoyproxy/ratelimit's YAML rules (config.go), its fixed
// window counting (limit.go) and the gRPC service Envoy calls (service.go).
// The service writes no counter itself: a Charger it is handed charges them
// (charge.go), which a node does through its command layer's RLS.CHARGE,
// on the node that owns each counter's key.
//
// It builds on engine (the keyspace the counters live in, so they survive
// snapshots and replicate) and policy (which builds limitdb's other
// algorithms for the rules' algorithm extension), and must never import
// the protocol (resp), the transport (server), the command layer (command)
// or node, which wires it.
package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"gopkg.in/yaml.v3"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// ErrConfig wraps every error of a rules file: "file:line: field: why".
var ErrConfig = errors.New("rls config")

// Unit is a rate limit's unit, with the numbers of Envoy's
// RateLimitResponse.RateLimit.Unit.
type Unit = rlspb.RateLimitResponse_RateLimit_Unit

// unitSeconds are the units' windows, as envoyproxy/ratelimit counts them:
// a MONTH is 30 days and a YEAR 365, every window aligned to the Unix
// epoch (so a WEEK starts on a Thursday).
var unitSeconds = map[Unit]int64{
	rlspb.RateLimitResponse_RateLimit_SECOND: 1,
	rlspb.RateLimitResponse_RateLimit_MINUTE: 60,
	rlspb.RateLimitResponse_RateLimit_HOUR:   60 * 60,
	rlspb.RateLimitResponse_RateLimit_DAY:    60 * 60 * 24,
	rlspb.RateLimitResponse_RateLimit_WEEK:   60 * 60 * 24 * 7,
	rlspb.RateLimitResponse_RateLimit_MONTH:  60 * 60 * 24 * 30,
	rlspb.RateLimitResponse_RateLimit_YEAR:   60 * 60 * 24 * 365,
}

// UnitSeconds is the length of a unit's window in seconds; 0 for UNKNOWN or
// a number Envoy does not define.
func UnitSeconds(u Unit) int64 { return unitSeconds[u] }

// unitName is u's name, as Unit.String gives it, without the reflection
// protobuf's String goes through.
func unitName(u Unit) string {
	switch u {
	case rlspb.RateLimitResponse_RateLimit_SECOND:
		return "SECOND"
	case rlspb.RateLimitResponse_RateLimit_MINUTE:
		return "MINUTE"
	case rlspb.RateLimitResponse_RateLimit_HOUR:
		return "HOUR"
	case rlspb.RateLimitResponse_RateLimit_DAY:
		return "DAY"
	case rlspb.RateLimitResponse_RateLimit_WEEK:
		return "WEEK"
	case rlspb.RateLimitResponse_RateLimit_MONTH:
		return "MONTH"
	case rlspb.RateLimitResponse_RateLimit_YEAR:
		return "YEAR"
	}
	return u.String()
}

// RateLimit is one rule's limit: RequestsPerUnit per Unit, or no limit at
// all when Unlimited.
type RateLimit struct {
	RequestsPerUnit uint32
	Unit            Unit
	Unlimited       bool
	Name            string
	// ShadowMode counts and reports but never makes the overall code
	// OVER_LIMIT.
	ShadowMode bool
	// QuotaMode: over the limit, the descriptor still answers OK (with its
	// limit, limit_remaining 0 and no duration_until_reset) and does not
	// make the overall code OVER_LIMIT; the hits count as over the limit
	// (envoyproxy/ratelimit's quota_mode).
	QuotaMode bool
	// DetailedMetric names the statistics after the request's values
	// (envoyproxy/ratelimit's detailed_metric); it changes no answer.
	DetailedMetric bool
	// FullKey names the rule as envoyproxy/ratelimit's statistics do:
	// domain.key_value.key..., the path in the rules.
	FullKey string
	// Replaces names the rules this one replaces: a rule whose Name is
	// listed by any rule matched in the same request is left out of that
	// request's decision (envoyproxy/ratelimit's replaces).
	Replaces []string
	// Algorithm is limitdb's extension: one of its other algorithms for
	// this rule, with Burst where the algorithm has one (0: the limit);
	// "" is envoyproxy/ratelimit's fixed window. Limiter is the algorithm
	// built with requests_per_unit per unit (nil for the fixed window).
	Algorithm policy.Algorithm
	Burst     int64
	Limiter   engine.Limiter
}

// Entry is one key/value pair of a request's descriptor.
type Entry struct{ Key, Value string }

// node is one level of a domain's descriptor tree: its children by
// "key_value" (or "key" when the rule names no value), and, in file
// order, the children whose value ends in '*'.
type node struct {
	limit     *RateLimit
	children  map[string]*node
	wildcards []string
	// shareThreshold: the values this wildcard rule matches share one
	// counter, keyed by the wildcard (share_threshold).
	shareThreshold bool
	// valueToMetric: a value matched by this key-only or wildcard rule is
	// named in the statistics (value_to_metric).
	valueToMetric bool
}

// Config is a loaded set of rules: one descriptor tree per domain. It is
// never modified once loaded.
type Config struct {
	domains map[string]*node
	files   []string
	// mergeDomains: a file of a domain already loaded adds its rules to
	// the domain's (MERGE_DOMAIN_CONFIG) instead of being an error.
	mergeDomains bool
}

// Domains lists the domains with rules, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Files lists the files the rules came from, in load order.
func (c *Config) Files() []string { return c.files }

// DefaultMaxConfigBytes is rls-config-max-bytes' default: the most bytes
// the rules files of a directory may hold together. A rules file of tens of
// thousands of descriptors is a few megabytes; parsing one costs tens of
// times its size in memory, so the cap is what keeps a runaway generator's
// output from taking the server's memory with it.
const DefaultMaxConfigBytes = 8 << 20

// LoadDir loads every regular file of dir whose name ends in .yaml or .yml
// (envoyproxy/ratelimit loads every file; editors' backups and dotfiles
// are left out here), in name order. Any broken file fails the whole load,
// naming the file, the line and the field. Two files of one domain are an
// error, as in envoyproxy/ratelimit without MERGE_DOMAIN_CONFIG; with
// mergeDomains (MERGE_DOMAIN_CONFIG=true) they are merged as Add merges.
// Files that hold more than maxBytes together (0: no cap) are refused
// before any is parsed, and none is read past the cap.
func LoadDir(dir string, mergeDomains bool, maxBytes int64) (*Config, error) {
	files, err := readRuleFiles(dir, maxBytes)
	if err != nil {
		return nil, err
	}
	c := &Config{domains: map[string]*node{}, mergeDomains: mergeDomains}
	for _, f := range files {
		if err := c.Add(f.path, f.data); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ruleData is one rules file's name and contents.
type ruleData struct {
	name, path string
	data       []byte
}

// readRuleFiles reads dir's rules files (ruleFile) in name order, refusing
// them once they hold more than maxBytes together (0: no cap).
func readRuleFiles(dir string, maxBytes int64) ([]ruleData, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var out []ruleData
	total := int64(0)
	for _, e := range ents {
		if !ruleFile(e) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, over, err := readCapped(path, maxBytes-total, maxBytes <= 0)
		if err != nil {
			return nil, err
		}
		total += int64(len(data))
		if over {
			return nil, fmt.Errorf("%w: %s: the rules files of %s hold more than rls-config-max-bytes (%d bytes): split the rules over fewer descriptors or raise the cap",
				ErrConfig, path, dir, maxBytes)
		}
		out = append(out, ruleData{e.Name(), path, data})
	}
	return out, nil
}

// readCapped reads path unless it holds more than room bytes (over);
// unlimited reads it whatever its size. A file over its room is known by
// its size and never read, and one within it costs its size in memory.
func readCapped(path string, room int64, unlimited bool) (data []byte, over bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !unlimited && fi.Size() > room {
		return nil, true, nil
	}
	r := io.Reader(f)
	if !unlimited {
		r = io.LimitReader(f, room+1) // a file that grew since Stat
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+1))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !unlimited && int64(buf.Len()) > room {
		return nil, true, nil
	}
	return buf.Bytes(), false, nil
}

// Parse loads one file's rules into a new Config.
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	if err := c.Add(name, data); err != nil {
		return nil, err
	}
	return c, nil
}

// Add loads one more file's rules, named name in errors. A file of a
// domain already loaded is an error, unless c merges domains: then its
// top-level descriptors join the domain's, as envoyproxy/ratelimit's
// MERGE_DOMAIN_CONFIG merges them (a top-level key and value the domain
// has already is a duplicate; deeper levels are not merged, and wildcards
// keep file order, the earlier file's first). On error c is left as it
// was.
func (c *Config) Add(name string, data []byte) error {
	p := parser{file: name, domains: c.domains, merge: c.mergeDomains}
	domain, root, err := p.parseFile(data)
	if err != nil {
		return err
	}
	if prior := c.domains[domain]; prior != nil {
		for k, n := range root.children {
			prior.children[k] = n
		}
		prior.wildcards = append(prior.wildcards, root.wildcards...)
	} else {
		c.domains[domain] = root
	}
	c.files = append(c.files, name)
	return nil
}

// parser reads one file's YAML, keeping its name for errors. domains are
// the domains loaded before the file; merge: its domain may be one of
// them, and prior is then that domain's tree, which its top-level
// descriptors must not repeat.
type parser struct {
	file    string
	domains map[string]*node
	merge   bool
	prior   *node
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s: %s", ErrConfig, p.file, n.Line, field, fmt.Sprintf(format, args...))
}

// parseFile reads a whole file: a mapping of domain and descriptors.
func (p *parser) parseFile(data []byte) (string, *node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3's messages carry "line N" already.
		return "", nil, fmt.Errorf("%w: %s: %v", ErrConfig, p.file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return "", nil, fmt.Errorf("%w: %s: config file cannot have empty domain", ErrConfig, p.file)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return "", nil, p.errf(top, "domain", "the file must be a mapping of domain and descriptors")
	}
	var domain string
	var descs *yaml.Node
	err := p.fields(top, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "domain":
			return p.scalar(v, "domain", &domain)
		case "descriptors":
			descs = v
			return nil
		}
		return p.errf(k, key, "unknown key '%s'", key)
	})
	if err != nil {
		return "", nil, err
	}
	if domain == "" {
		return "", nil, p.errf(top, "domain", "config file cannot have empty domain")
	}
	if prior := p.domains[domain]; prior != nil {
		if !p.merge {
			return "", nil, fmt.Errorf("%w: %s: domain: duplicate domain '%s'", ErrConfig, p.file, domain)
		}
		p.prior = prior
	}
	root := &node{children: map[string]*node{}}
	if descs != nil {
		if err := p.descriptors(descs, root, domain+".", "descriptors"); err != nil {
			return "", nil, err
		}
	}
	return domain, root, nil
}

// fields calls fn for each key of mapping m, with the value node; field is
// the path of m, for errors.
func (p *parser) fields(m *yaml.Node, field string, fn func(key string, k, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		path := k.Value
		if field != "" {
			path = field + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, field, "key is not a string")
		}
		if seen[k.Value] {
			return p.errf(k, path, "key given twice")
		}
		seen[k.Value] = true
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// scalar decodes a scalar value into dst (string, bool or uint32),
// naming field in errors.
func (p *parser) scalar(v *yaml.Node, field string, dst any) error {
	if v.Kind != yaml.ScalarNode {
		return p.errf(v, field, "want a single value")
	}
	if v.Tag == "!!null" {
		return nil
	}
	if err := v.Decode(dst); err != nil {
		want := "a string"
		switch dst.(type) {
		case *uint32:
			want = "a number from 0 to 4294967295"
		case *bool:
			want = "true or false"
		}
		return p.errf(v, field, "want %s, got %q", want, v.Value)
	}
	return nil
}

// descriptors reads a list of descriptors into parent's children; prefix
// is the rule path so far (domain.key_value.), field the YAML path.
func (p *parser) descriptors(list *yaml.Node, parent *node, prefix, field string) error {
	if list.Tag == "!!null" {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return p.errf(list, field, "want a list of descriptors")
	}
	for i, d := range list.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if d.Kind != yaml.MappingNode {
			return p.errf(d, f, "want a mapping with key, value, rate_limit, descriptors")
		}
		var key, value string
		var shadow, quota, detailed, share, toMetric bool
		var rl, children *yaml.Node
		err := p.fields(d, f, func(name string, k, v *yaml.Node) error {
			switch name {
			case "key":
				return p.scalar(v, f+".key", &key)
			case "value":
				return p.scalar(v, f+".value", &value)
			case "rate_limit":
				rl = v
				return nil
			case "descriptors":
				children = v
				return nil
			case "shadow_mode":
				return p.scalar(v, f+".shadow_mode", &shadow)
			case "quota_mode":
				return p.scalar(v, f+".quota_mode", &quota)
			case "detailed_metric":
				return p.scalar(v, f+".detailed_metric", &detailed)
			case "value_to_metric":
				return p.scalar(v, f+".value_to_metric", &toMetric)
			case "share_threshold":
				return p.scalar(v, f+".share_threshold", &share)
			}
			return p.errf(k, f+"."+name, "unknown key '%s'", name)
		})
		if err != nil {
			return err
		}
		if key == "" {
			return p.errf(d, f+".key", "descriptor has empty key")
		}
		final := key
		if value != "" {
			final += "_" + value
		}
		path := prefix + final
		dup := parent.children[final] != nil
		if p.prior != nil && field == "descriptors" { // the top level of a merged domain
			dup = dup || p.prior.children[final] != nil
		}
		if dup {
			return p.errf(d, f, "duplicate descriptor composite key '%s'", path)
		}
		if share && !strings.HasSuffix(final, "*") {
			return p.errf(d, f+".share_threshold", "share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", final)
		}
		n := &node{children: map[string]*node{}, shareThreshold: share, valueToMetric: toMetric}
		if rl != nil {
			lim, err := p.rateLimit(rl, f+".rate_limit")
			if err != nil {
				return err
			}
			if lim != nil {
				lim.ShadowMode, lim.QuotaMode, lim.DetailedMetric, lim.FullKey = shadow, quota, detailed, path
				n.limit = lim
			}
		}
		if children != nil {
			if err := p.descriptors(children, n, path+".", f+".descriptors"); err != nil {
				return err
			}
		}
		parent.children[final] = n
		if strings.HasSuffix(final, "*") {
			parent.wildcards = append(parent.wildcards, final)
		}
	}
	return nil
}

// rateLimit reads a rate_limit mapping; nil for an empty one.
func (p *parser) rateLimit(m *yaml.Node, field string) (*RateLimit, error) {
	if m.Tag == "!!null" {
		return nil, nil
	}
	if m.Kind != yaml.MappingNode {
		return nil, p.errf(m, field, "want a mapping with unit and requests_per_unit")
	}
	var lim RateLimit
	var unit, algorithm string
	var unitNode, algNode, burstNode *yaml.Node
	err := p.fields(m, field, func(name string, k, v *yaml.Node) error {
		switch name {
		case "unit":
			unitNode = v
			return p.scalar(v, field+".unit", &unit)
		case "requests_per_unit":
			return p.scalar(v, field+".requests_per_unit", &lim.RequestsPerUnit)
		case "unlimited":
			return p.scalar(v, field+".unlimited", &lim.Unlimited)
		case "name":
			return p.scalar(v, field+".name", &lim.Name)
		case "replaces":
			return p.replaces(v, field+".replaces", &lim.Replaces)
		case "algorithm":
			algNode = v
			return p.scalar(v, field+".algorithm", &algorithm)
		case "burst":
			burstNode = v
			var b uint32
			err := p.scalar(v, field+".burst", &b)
			lim.Burst = int64(b)
			return err
		}
		return p.errf(k, field+"."+name, "unknown key '%s'", name)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range lim.Replaces {
		if r == lim.Name {
			return nil, p.errf(m, field+".replaces", "replaces should not contain name of same descriptor")
		}
	}
	u, known := rlspb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unit)]
	valid := known && u != int32(rlspb.RateLimitResponse_RateLimit_UNKNOWN)
	switch {
	case lim.Unlimited && valid:
		return nil, p.errf(unitNode, field+".unit", "should not specify rate limit unit when unlimited")
	case !lim.Unlimited && !valid:
		at := m
		if unitNode != nil {
			at = unitNode
		}
		return nil, p.errf(at, field+".unit", "invalid rate limit unit '%s'", unit)
	}
	lim.Unit = Unit(u)
	if err := p.algorithm(&lim, algorithm, m, algNode, burstNode, field); err != nil {
		return nil, err
	}
	return &lim, nil
}

// algorithm builds the extension's algorithm of lim, named alg ("" or
// fixed_window: envoyproxy/ratelimit's fixed window, no burst).
func (p *parser) algorithm(lim *RateLimit, alg string, m, algNode, burstNode *yaml.Node, field string) error {
	if alg == "" || strings.EqualFold(alg, string(policy.FixedWindow)) {
		if burstNode != nil {
			return p.errf(burstNode, field+".burst", "burst needs an algorithm that has one (gcra, token_bucket)")
		}
		return nil
	}
	a, ok := policy.ParseAlgorithm(alg)
	if !ok || a == policy.LeakyQueue || a == policy.Concurrency {
		return p.errf(algNode, field+".algorithm", "unknown algorithm '%s' (use fixed_window, gcra, token_bucket, sliding_window or sliding_log)", alg)
	}
	if lim.Unlimited {
		return p.errf(algNode, field+".algorithm", "should not specify an algorithm when unlimited")
	}
	l, err := policy.Limiter(policy.Policy{Algorithm: a, Limit: int64(lim.RequestsPerUnit),
		Period: time.Duration(UnitSeconds(lim.Unit)) * time.Second, Burst: lim.Burst})
	if err != nil {
		at, f := m, field
		var fe *policy.FieldError
		if errors.As(err, &fe) {
			switch fe.Field {
			case "burst":
				at, f = burstNode, field+".burst"
			case "limit":
				f = field + ".requests_per_unit"
			}
			err = errors.New(fe.Msg)
		}
		if at == nil {
			at = m
		}
		return p.errf(at, f, "%v", err)
	}
	lim.Algorithm, lim.Limiter = a, l
	return nil
}

// replaces reads a replaces list: mappings of one name each.
func (p *parser) replaces(list *yaml.Node, field string, dst *[]string) error {
	if list.Tag == "!!null" {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return p.errf(list, field, "want a list of mappings with a name")
	}
	for i, r := range list.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if r.Kind != yaml.MappingNode {
			return p.errf(r, f, "want a mapping with a name")
		}
		var name string
		err := p.fields(r, f, func(key string, k, v *yaml.Node) error {
			if key == "name" {
				return p.scalar(v, f+".name", &name)
			}
			return p.errf(k, f+"."+key, "unknown key '%s'", key)
		})
		if err != nil {
			return err
		}
		if name == "" {
			return p.errf(r, f+".name", "should not have an empty replaces entry")
		}
		*dst = append(*dst, name)
	}
	return nil
}

// Match is what the rules say about one request descriptor.
type Match struct {
	// Limit is the rule that applies; nil: none.
	Limit *RateLimit
	// Shared holds, per entry of the descriptor, the wildcard value
	// ("/api/*") that stands for the entry's value in the counter's key
	// when a share_threshold rule matched it, "" otherwise; nil when no
	// share_threshold rule matched.
	Shared []string
	// StatsKey names the statistics the descriptor counts under when it
	// is not Limit.FullKey (detailed_metric, value_to_metric); "" otherwise.
	StatsKey string
}

// Lookup is Match's rule alone.
func (c *Config) Lookup(domain string, entries []Entry) *RateLimit {
	return c.Match(domain, entries).Limit
}

// step matches one entry among a level's rules: the rule with the same
// key and value; else the first wildcard rule (in file order) whose value
// without its '*' starts the entry's value, returned as wild ("path_/api/*");
// else the rule with the key and no value (byValue false). nil: no rule.
func (n *node) step(e Entry) (next *node, wild string, byValue bool) {
	var buf [64]byte // key_value, on the stack for the usual short ones
	kv := append(append(append(buf[:0], e.Key...), '_'), e.Value...)
	if next = n.children[string(kv)]; next != nil {
		return next, "", true
	}
	for _, w := range n.wildcards {
		if p := w[:len(w)-1]; len(kv) >= len(p) && string(kv[:len(p)]) == p {
			return n.children[w], w, true
		}
	}
	return n.children[e.Key], "", false
}

// Match finds the rule of one request descriptor, as envoyproxy/ratelimit
// does: the entries walk the domain's tree one level each, each matched by
// step. The rule applies only when it matches the descriptor's last entry:
// a descriptor longer or shorter than the rules' path gets no limit. An
// unknown domain gets none either.
//
// Wildcards are looked for among the rules of the level being matched
// (some versions of envoyproxy/ratelimit look among the domain's top-level
// wildcards at every level, which leaves nested wildcards unmatched).
func (c *Config) Match(domain string, entries []Entry) Match {
	if c == nil {
		return Match{}
	}
	level := c.domains[domain]
	if level == nil {
		return Match{}
	}
	var m Match
	toMetric := false // a value_to_metric rule named a value
	for i, e := range entries {
		next, wild, byValue := level.step(e)
		if next == nil {
			return Match{}
		}
		if wild != "" && next.shareThreshold {
			if m.Shared == nil {
				m.Shared = make([]string, len(entries))
			}
			m.Shared[i] = strings.TrimPrefix(wild, e.Key+"_")
		}
		if next.valueToMetric && !next.shareThreshold && (wild != "" || !byValue) {
			toMetric = true
		}
		if i == len(entries)-1 {
			m.Limit = next.limit
			break
		}
		if len(next.children) == 0 {
			return Match{}
		}
		level = next
	}
	switch {
	case m.Limit == nil:
		return Match{}
	case m.Limit.DetailedMetric:
		m.StatsKey = detailedKey(domain, entries, m.Shared)
	case toMetric:
		if k := c.valueKey(domain, entries); k != m.Limit.FullKey {
			m.StatsKey = k
		}
	}
	return m
}

// detailedKey names a detailed_metric rule's statistics after the
// request's values: domain.key_value.key_value... (the '_' even before an
// empty value), a shared entry named by its wildcard, as
// envoyproxy/ratelimit names them.
func detailedKey(domain string, entries []Entry, shared []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		switch {
		case shared != nil && shared[i] != "":
			b.WriteByte('_')
			b.WriteString(shared[i])
		case shared == nil || e.Value != "":
			b.WriteByte('_')
			b.WriteString(e.Value)
		}
	}
	return b.String()
}

// valueKey names statistics as value_to_metric does: the rule's path, with
// the request's value in place of a value_to_metric rule's wildcard or
// missing value (a share_threshold wildcard stays the wildcard).
func (c *Config) valueKey(domain string, entries []Entry) string {
	var b strings.Builder
	b.WriteString(domain)
	level := c.domains[domain]
	for _, e := range entries {
		next, wild, byValue := level.step(e)
		b.WriteByte('.')
		b.WriteString(e.Key)
		value := e.Value
		switch {
		case wild != "" && (next.shareThreshold || !next.valueToMetric):
			value = strings.TrimPrefix(wild, e.Key+"_")
		case !byValue && !next.valueToMetric:
			value = ""
		}
		if value != "" {
			b.WriteByte('_')
			b.WriteString(value)
		}
		level = next
	}
	return b.String()
}
