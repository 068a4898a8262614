package rls

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchReload walks a rules directory through edits, polling after
// each: a change that loads applies, a broken one keeps the last good
// rules and says why, once.
func TestWatchReload(t *testing.T) {
	rule := func(n string) string {
		return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n      requests_per_unit: " + n + "\n"
	}
	const broken = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n"
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("d.yaml", rule("5"))
	s, _ := newService(t)
	var logs bytes.Buffer
	if err := s.LoadDir(dir, log.New(&logs, "", 0)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, file, body string // file "": no edit
		limit            uint32 // the rule of k in effect after the poll
		lastErr          string // a substring of LastError; "" for none
		logged           int    // lines logged so far
	}{
		{"unchanged", "", "", 5, "", 0},
		{"edited", "d.yaml", rule("7"), 7, "", 1},
		{"broken", "d.yaml", broken, 7, "d.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'", 2},
		{"still broken, logged once", "", "", 7, "fortnight", 2},
		{"an editor's backup is ignored", "d.yaml~", "garbage: [", 7, "fortnight", 2},
		{"fixed", "d.yaml", rule("9"), 9, "", 3},
		{"a second domain of the same name", "e.yml", rule("1"), 9, "duplicate domain 'd'", 4},
	}
	for i, st := range steps {
		if st.file != "" {
			write(st.file, st.body)
		}
		s.poll(false)
		lim := s.Rules().Lookup("d", []Entry{{"k", "x"}})
		if lim == nil || lim.RequestsPerUnit != st.limit {
			t.Errorf("step %d (%s): limit %v, want %d", i, st.name, lim, st.limit)
		}
		if got := s.LastError(); (st.lastErr == "") != (got == "") || !strings.Contains(got, st.lastErr) {
			t.Errorf("step %d (%s): LastError %q, want %q", i, st.name, got, st.lastErr)
		}
		if n := strings.Count(logs.String(), "\n"); n != st.logged {
			t.Errorf("step %d (%s): %d lines logged, want %d:\n%s", i, st.name, n, st.logged, logs.String())
		}
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "duplicate domain") {
		t.Errorf("Reload: %v, want the duplicate domain", err)
	}
}
