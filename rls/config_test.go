package rls

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The examples of envoyproxy/ratelimit's README ("Examples" 1 to 3), and
// a wildcard and shadow-mode rule set in the same format.
const (
	readmeMongo = `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`
	readmeMessaging = `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`
	readmeEdge = `domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`
	wildcards = `domain: wild
descriptors:
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 20, name: api}
  - key: path
    value: /api/admin
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: tenant
    descriptors:
      - key: path
        value: /v*
        shadow_mode: true
        detailed_metric: true
        rate_limit: {unit: week, requests_per_unit: 7}
  - key: free
    rate_limit: {unlimited: true}
`
)

func mustParse(t *testing.T, name, yml string) *Config {
	t.Helper()
	c, err := Parse(name, []byte(yml))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return c
}

func entries(kv ...string) []Entry {
	out := make([]Entry, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Entry{kv[i], kv[i+1]})
	}
	return out
}

func TestLookup(t *testing.T) {
	const (
		second = rlspb.RateLimitResponse_RateLimit_SECOND
		minute = rlspb.RateLimitResponse_RateLimit_MINUTE
		hour   = rlspb.RateLimitResponse_RateLimit_HOUR
		day    = rlspb.RateLimitResponse_RateLimit_DAY
		week   = rlspb.RateLimitResponse_RateLimit_WEEK
	)
	c := &Config{domains: map[string]*node{}}
	for name, yml := range map[string]string{"mongo": readmeMongo, "messaging": readmeMessaging, "edge": readmeEdge, "wild": wildcards} {
		if err := c.Add(name, []byte(yml)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		domain  string
		entries []Entry
		want    *RateLimit // nil: no rule; only the fields set are compared
	}{
		{"exact value", "mongo_cps", entries("database", "users"), &RateLimit{RequestsPerUnit: 500, Unit: second, FullKey: "mongo_cps.database_users"}},
		{"no rule for the value, none for the key alone", "mongo_cps", entries("database", "logs"), nil},
		{"unknown domain", "nope", entries("database", "users"), nil},
		{"nested: marketing to a number", "messaging", entries("message_type", "marketing", "to_number", "2061111111"), &RateLimit{RequestsPerUnit: 5, Unit: day, FullKey: "messaging.message_type_marketing.to_number"}},
		{"key-only rule at the top", "messaging", entries("to_number", "2061111111"), &RateLimit{RequestsPerUnit: 100, Unit: day, FullKey: "messaging.to_number"}},
		{"descriptor shorter than the rule's path", "messaging", entries("message_type", "marketing"), nil},
		{"descriptor longer than the rule's path", "messaging", entries("to_number", "1", "extra", "x"), nil},
		{"other message type has no rule", "messaging", entries("message_type", "transactional", "to_number", "1"), nil},
		{"key-only matches any address", "edge_proxy_per_ip", entries("remote_address", "10.0.0.1"), &RateLimit{RequestsPerUnit: 10, Unit: second}},
		{"exact value beats key-only", "edge_proxy_per_ip", entries("remote_address", "50.0.0.5"), &RateLimit{RequestsPerUnit: 0, Unit: second}},
		{"exact beats wildcard", "wild", entries("path", "/api/admin"), &RateLimit{RequestsPerUnit: 2, Unit: minute}},
		{"wildcard beats key-only", "wild", entries("path", "/api/users"), &RateLimit{RequestsPerUnit: 20, Unit: minute, Name: "api", FullKey: "wild.path_/api/*"}},
		{"wildcard with nothing after the prefix", "wild", entries("path", "/api/"), &RateLimit{RequestsPerUnit: 20, Unit: minute}},
		{"key-only when no wildcard matches", "wild", entries("path", "/web"), &RateLimit{RequestsPerUnit: 1000, Unit: hour}},
		{"nested wildcard", "wild", entries("tenant", "acme", "path", "/v2/x"), &RateLimit{RequestsPerUnit: 7, Unit: week, ShadowMode: true, DetailedMetric: true}},
		{"nested wildcard not matching", "wild", entries("tenant", "acme", "path", "/api/x"), nil},
		{"unlimited", "wild", entries("free", "x"), &RateLimit{Unlimited: true}},
		{"no entries", "wild", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Lookup(tc.domain, tc.entries)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want no rule", *got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("got no rule, want %+v", *tc.want)
			}
			if got.RequestsPerUnit != tc.want.RequestsPerUnit || got.Unit != tc.want.Unit || got.Unlimited != tc.want.Unlimited ||
				got.ShadowMode != tc.want.ShadowMode || got.DetailedMetric != tc.want.DetailedMetric {
				t.Errorf("got %+v, want %+v", *got, *tc.want)
			}
			if tc.want.Name != "" && got.Name != tc.want.Name {
				t.Errorf("name = %q, want %q", got.Name, tc.want.Name)
			}
			if tc.want.FullKey != "" && got.FullKey != tc.want.FullKey {
				t.Errorf("full key = %q, want %q", got.FullKey, tc.want.FullKey)
			}
		})
	}
}

// metricRules exercise share_threshold, detailed_metric and
// value_to_metric, which change the counter's key or the statistics' name.
const metricRules = `domain: m
descriptors:
  - key: path
    value: /shared/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: path
    value: /named/*
    value_to_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: path
    value: /detailed/*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: route
    value_to_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: client
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: org
    value_to_metric: true
    descriptors:
      - key: path
        value: /v1/*
        share_threshold: true
        rate_limit: {unit: hour, requests_per_unit: 3}
      - key: user
        rate_limit: {unit: hour, requests_per_unit: 3}
  - key: exact
    value: x
    value_to_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
`

// TestMatchMetricsAndSharing: the wildcard values standing for entries'
// values in counter keys, and the statistics' names, as
// envoyproxy/ratelimit derives them.
func TestMatchMetricsAndSharing(t *testing.T) {
	c := mustParse(t, "m.yaml", metricRules)
	cases := []struct {
		name     string
		entries  []Entry
		shared   []string
		statsKey string // "": the rule's FullKey
		fullKey  string
	}{
		{"share_threshold", entries("path", "/shared/a"), []string{"/shared/*"}, "", "m.path_/shared/*"},
		{"value_to_metric on a wildcard", entries("path", "/named/a"), nil, "m.path_/named/a", "m.path_/named/*"},
		{"detailed_metric with share_threshold", entries("path", "/detailed/a"), []string{"/detailed/*"}, "m.path_/detailed/*", "m.path_/detailed/*"},
		{"value_to_metric on a key-only rule", entries("route", "/r"), nil, "m.route_/r", "m.route"},
		{"value_to_metric, empty value", entries("route", ""), nil, "", "m.route"},
		{"detailed_metric", entries("client", "c1"), nil, "m.client_c1", "m.client"},
		{"detailed_metric, empty value", entries("client", ""), nil, "m.client_", "m.client"},
		{"nested share_threshold under value_to_metric", entries("org", "o", "path", "/v1/x"), []string{"", "/v1/*"}, "m.org_o.path_/v1/*", "m.org.path_/v1/*"},
		{"nested key-only under value_to_metric", entries("org", "o", "user", "u"), nil, "m.org_o.user", "m.org.user"},
		{"value_to_metric on an exact value changes nothing", entries("exact", "x"), nil, "", "m.exact_x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := c.Match("m", tc.entries)
			if m.Limit == nil {
				t.Fatal("no rule")
			}
			if m.Limit.FullKey != tc.fullKey {
				t.Errorf("full key %q, want %q", m.Limit.FullKey, tc.fullKey)
			}
			if strings.Join(m.Shared, ",") != strings.Join(tc.shared, ",") || (m.Shared == nil) != (tc.shared == nil) {
				t.Errorf("shared %q, want %q", m.Shared, tc.shared)
			}
			if m.StatsKey != tc.statsKey {
				t.Errorf("stats key %q, want %q", m.StatsKey, tc.statsKey)
			}
		})
	}
	if got := string(appendCacheKey(nil, "m", entries("org", "o", "path", "/v1/x"), []string{"", "/v1/*"}, 3600)); got != "m_org_o_path_/v1/*_3600" {
		t.Errorf("shared cache key %q", got)
	}
}

func TestReplacesParsed(t *testing.T) {
	c := mustParse(t, "r.yaml", "domain: r\ndescriptors:\n  - key: k\n    rate_limit:\n      name: b\n      unit: hour\n      requests_per_unit: 1\n      replaces:\n        - name: a\n        - name: c\n")
	if got := strings.Join(c.Lookup("r", entries("k", "v")).Replaces, ","); got != "a,c" {
		t.Errorf("replaces %q", got)
	}
}

func TestUnits(t *testing.T) {
	for unit, secs := range map[string]int64{"second": 1, "MINUTE": 60, "Hour": 3600, "day": 86400,
		"week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400} {
		c := mustParse(t, "u.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: "+unit+", requests_per_unit: 1}\n")
		if got := UnitSeconds(c.Lookup("d", entries("k", "v")).Unit); got != secs {
			t.Errorf("%s: %d s, want %d", unit, got, secs)
		}
	}
}

// TestBrokenFiles: every broken file is refused with its name, the line
// and the field at fault.
func TestBrokenFiles(t *testing.T) {
	cases := []struct {
		name, yml, want string
	}{
		{"bad unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 5\n",
			"f.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'"},
		{"missing unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n",
			"f.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit ''"},
		{"negative limit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n",
			"f.yaml:6: descriptors[0].rate_limit.requests_per_unit: want a number from 0 to 4294967295, got \"-1\""},
		{"unknown key", "domain: d\ndescriptors:\n  - key: k\n    valeu: v\n",
			"f.yaml:4: descriptors[0].valeu: unknown key 'valeu'"},
		{"unknown key in a nested descriptor", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: {unit: second, requests_per_unit: 1, brust: 3}\n",
			"f.yaml:6: descriptors[0].descriptors[0].rate_limit.brust: unknown key 'brust'"},
		{"burst without an algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      burst: 3\n",
			"f.yaml:7: descriptors[0].rate_limit.burst: burst needs an algorithm that has one (gcra, token_bucket)"},
		{"unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky_queue\n",
			"f.yaml:7: descriptors[0].rate_limit.algorithm: unknown algorithm 'leaky_queue' (use fixed_window, gcra, token_bucket, sliding_window or sliding_log)"},
		{"concurrency, which Envoy never releases", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: concurrency\n",
			"f.yaml:7: descriptors[0].rate_limit.algorithm: unknown algorithm 'concurrency' (use fixed_window, gcra, token_bucket, sliding_window or sliding_log)"},
		{"burst on a sliding window", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: sliding_window\n      burst: 3\n",
			"f.yaml:8: descriptors[0].rate_limit.burst: sliding_window has no burst: it admits exactly limit per period"},
		{"algorithm with no requests", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 0\n      algorithm: gcra\n",
			"f.yaml:5: descriptors[0].rate_limit.requests_per_unit: must be at least 1, got 0"},
		{"algorithm when unlimited", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      algorithm: gcra\n",
			"f.yaml:6: descriptors[0].rate_limit.algorithm: should not specify an algorithm when unlimited"},
		{"empty key", "domain: d\ndescriptors:\n  - value: v\n",
			"f.yaml:3: descriptors[0].key: descriptor has empty key"},
		{"duplicate descriptor", "domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n",
			"f.yaml:5: descriptors[1]: duplicate descriptor composite key 'd.k_v'"},
		{"unit with unlimited", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n",
			"f.yaml:4: descriptors[0].rate_limit.unit: should not specify rate limit unit when unlimited"},
		{"no domain", "descriptors:\n  - key: k\n",
			"f.yaml:1: domain: config file cannot have empty domain"},
		{"shadow_mode not a bool", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: sometimes\n",
			"f.yaml:4: descriptors[0].shadow_mode: want true or false, got \"sometimes\""},
		{"descriptors not a list", "domain: d\ndescriptors: {key: k}\n",
			"f.yaml:2: descriptors: want a list of descriptors"},
		{"replaces its own name", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: x, unit: second, requests_per_unit: 1, replaces: [{name: x}]}\n",
			"f.yaml:4: descriptors[0].rate_limit.replaces: replaces should not contain name of same descriptor"},
		{"replaces an empty name", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: \"\"}]}\n",
			"f.yaml:4: descriptors[0].rate_limit.replaces[0].name: should not have an empty replaces entry"},
		{"replaces not a list", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: x}\n",
			"f.yaml:4: descriptors[0].rate_limit.replaces: want a list of mappings with a name"},
		{"share_threshold without a wildcard", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n",
			"f.yaml:3: descriptors[0].share_threshold: share_threshold can only be used with wildcard values (ending with '*'), but found key 'k_v'"},
		{"bad YAML", "domain: d\ndescriptors:\n  - key: [\n",
			"f.yaml: yaml: line 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.yml))
			if err == nil {
				t.Fatalf("loaded; want error %q", tc.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadDir(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("every yaml file", func(t *testing.T) {
		dir := t.TempDir()
		write(dir, "mongo.yaml", readmeMongo)
		write(dir, "messaging.yml", readmeMessaging)
		write(dir, "notes.txt", "not yaml: [")
		write(dir, ".edge.yaml.swp", "not yaml: [")
		c, err := LoadDir(dir, false, DefaultMaxConfigBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.Domains(), ","); got != "messaging,mongo_cps" {
			t.Errorf("domains %s", got)
		}
	})
	t.Run("a broken file fails the load", func(t *testing.T) {
		dir := t.TempDir()
		write(dir, "a.yaml", readmeMongo)
		write(dir, "b.yaml", "domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: lots}\n")
		_, err := LoadDir(dir, false, DefaultMaxConfigBytes)
		want := filepath.Join(dir, "b.yaml") + ":4: descriptors[0].rate_limit.requests_per_unit: want a number"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
	t.Run("one domain in two files", func(t *testing.T) {
		dir := t.TempDir()
		write(dir, "a.yaml", readmeMongo)
		write(dir, "b.yaml", readmeMongo)
		_, err := LoadDir(dir, false, DefaultMaxConfigBytes)
		if err == nil || !strings.Contains(err.Error(), "b.yaml: domain: duplicate domain 'mongo_cps'") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		if _, err := LoadDir(filepath.Join(t.TempDir(), "missing"), false, DefaultMaxConfigBytes); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
}

// FuzzParse: no input crashes the parser, and what it accepts can be
// looked up.
func FuzzParse(f *testing.F) {
	for _, s := range []string{readmeMongo, readmeMessaging, readmeEdge, wildcards} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, yml string) {
		c, err := Parse("f.yaml", []byte(yml))
		if err != nil {
			return
		}
		for _, d := range c.Domains() {
			c.Lookup(d, entries("k", "v", "k", "v"))
		}
	})
}
