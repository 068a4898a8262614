package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/limit"
)

func TestParseRulesValid(t *testing.T) {
	t.Parallel()
	src := `policies:
  - name: api-per-user
    algorithm: gcra
    limit: 100
    period: 1m
    burst: 20
  - name: daily
    algorithm: GCRA
    limit: 5000
    period: 86400
    shadow: true
`
	ps, err := ParseRules("limits.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Policy{
		{Name: "api-per-user", Algorithm: GCRA, Limit: 100, Period: time.Minute, Burst: 20},
		{Name: "daily", Algorithm: GCRA, Limit: 5000, Period: 24 * time.Hour, Shadow: true},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d policies, want %d", len(ps), len(want))
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("policy %d = %+v, want %+v", i, ps[i], want[i])
		}
	}
}

func TestParseRulesNone(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"policies: []\n", "policies:\n"} {
		ps, err := ParseRules("f", []byte(src))
		if err != nil || len(ps) != 0 {
			t.Errorf("%q: %v, %v; want no policies and no error", src, ps, err)
		}
	}
}

// Every error names the file, the line and (where there is one) the field.
func TestParseRulesErrors(t *testing.T) {
	t.Parallel()
	head := "policies:\n  - name: a\n    algorithm: gcra\n"
	cases := []struct {
		name, src string
		want      []string // one per error, in order
	}{
		{"empty file", "", []string{"f.yaml:1: the file is empty"}},
		{"comment only", "# nothing\n", []string{"f.yaml:1: the file is empty"}},
		{"bad yaml", "policies:\n  - name: a\n    limit: [\n", []string{"f.yaml:3: invalid YAML"}},
		{"tab", "policies:\n  - name: a\n\tlimit: 1\n", []string{"f.yaml:2: invalid YAML: found a tab character"}},
		{"top level list", "- name: a\n", []string{"f.yaml:1: expected a mapping"}},
		{"unknown top key", "polices: []\n", []string{
			`f.yaml:1: unknown top-level key "polices"`, "f.yaml:1: field policies: missing"}},
		{"policies not a list", "policies: 3\n", []string{"f.yaml:1: field policies: must be a list"}},
		{"item not a mapping", "policies:\n  - 3\n", []string{"f.yaml:2: policies[0]: must be a mapping"}},
		{"limit zero", head + "    limit: 0\n    period: 1s\n", []string{
			"f.yaml:4: policies[0] (a): field limit: must be at least 1, got 0"}},
		{"limit not a number", head + "    limit: lots\n    period: 1s\n", []string{
			`f.yaml:4: policies[0] (a): field limit: must be a whole number, got "lots"`}},
		{"limit float", head + "    limit: 1.5\n    period: 1s\n", []string{
			`f.yaml:4: policies[0] (a): field limit: must be a whole number, got "1.5"`}},
		{"period unit", head + "    limit: 1\n    period: 1w\n", []string{
			`f.yaml:5: policies[0] (a): field period: invalid duration "1w": unknown unit`}},
		{"period zero", head + "    limit: 1\n    period: 0\n", []string{
			`f.yaml:5: policies[0] (a): field period: invalid duration "0": must be positive`}},
		{"unknown algorithm", "policies:\n  - name: a\n    algorithm: magic\n    limit: 1\n    period: 1s\n", []string{
			`f.yaml:3: policies[0] (a): field algorithm: unknown algorithm "magic"`}},
		{"missing fields", "policies:\n  - name: a\n", []string{
			"f.yaml:2: policies[0] (a): field algorithm: missing",
			"f.yaml:2: policies[0] (a): field limit: missing",
			"f.yaml:2: policies[0] (a): field period: missing"}},
		{"unknown field", head + "    limit: 1\n    period: 1s\n    limt: 2\n", []string{
			"f.yaml:6: policies[0] (a): field limt: unknown field"}},
		{"field twice", head + "    limit: 1\n    limit: 2\n    period: 1s\n", []string{
			"f.yaml:5: policies[0]: field limit: given twice (first on line 4)"}},
		{"bad name", "policies:\n  - name: a b\n    algorithm: gcra\n    limit: 1\n    period: 1s\n", []string{
			`f.yaml:2: policies[0] (a b): field name: "a b" is not a valid policy name`}},
		{"shadow not bool", head + "    limit: 1\n    period: 1s\n    shadow: maybe\n", []string{
			`f.yaml:6: policies[0] (a): field shadow: must be true or false, got "maybe"`}},
		{"burst negative", head + "    limit: 1\n    period: 1s\n    burst: -1\n", []string{
			"f.yaml:6: policies[0] (a): field burst: must be at least 1, got -1"}},
		{"burst on a window", "policies:\n  - name: a\n    algorithm: fixed_window\n    limit: 1\n    period: 1s\n    burst: 3\n", []string{
			"f.yaml:6: policies[0] (a): field burst: fixed_window has no burst"}},
		{"duplicate name", head + "    limit: 1\n    period: 1s\n" + "  - name: a\n    algorithm: gcra\n    limit: 2\n    period: 1s\n", []string{
			"f.yaml:6: policies[1] (a): field name: duplicate policy name (first defined on line 2)"}},
		{"second item bad, first fine", head + "    limit: 1\n    period: 1s\n" + "  - name: b\n    algorithm: gcra\n    limit: 2\n    period: soon\n", []string{
			`f.yaml:9: policies[1] (b): field period: invalid duration "soon"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := ParseRules("f.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("no error, policies %+v", ps)
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FileError", err, err)
			}
			if len(fe.Errs) != len(tc.want) {
				t.Fatalf("got %d errors (%v), want %d", len(fe.Errs), err, len(tc.want))
			}
			for i, w := range tc.want {
				if got := fe.Errs[i].Error(); !strings.HasPrefix(got, w) {
					t.Errorf("error %d = %q, want prefix %q", i, got, w)
				}
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{
		"60": time.Minute, "250ms": 250 * time.Millisecond, "1.5s": 1500 * time.Millisecond,
		"5m": 5 * time.Minute, "1h": time.Hour, "1d": 24 * time.Hour, "10us": 10 * time.Microsecond,
	}
	for s, want := range good {
		if got, err := limit.ParseDuration(s); err != nil || got != want {
			t.Errorf("limit.ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
		if back, err := limit.ParseDuration(limit.FormatDuration(want)); err != nil || back != want {
			t.Errorf("limit.FormatDuration(%v) = %q does not read back", want, limit.FormatDuration(want))
		}
	}
	for _, s := range []string{"", "0", "-1", "1w", "s", "abc", "0.0000001us", "99999999999999999999d"} {
		if d, err := limit.ParseDuration(s); err == nil {
			t.Errorf("limit.ParseDuration(%q) = %v, want an error", s, d)
		}
	}
}

func FuzzParseRules(f *testing.F) {
	f.Add([]byte("policies:\n  - name: a\n    algorithm: gcra\n    limit: 1\n    period: 1s\n"))
	f.Add([]byte("policies: [{name: x, algorithm: sliding_log, limit: 3, period: 250ms}]"))
	f.Add([]byte("policies:\n  - &a {name: a}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseRules("fuzz", data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("ParseRules accepted an invalid policy %+v: %v", p, verr)
			}
		}
	})
}
