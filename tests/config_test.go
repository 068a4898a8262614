package tests

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/resp"
)

// TestConfigFileAndFlags runs the binary with a config file and flags: the
// file sets what flags do not, flags win where both do, CONFIG GET shows
// the result and CONFIG SET changes the runtime directives.
func TestConfigFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "limitdb.conf")
	os.WriteFile(conf, []byte(`# test configuration
port 1                          
slowlog-log-slower-than 5
slowlog-max-len "7"
metrics-addr 127.0.0.1:0
`), 0o600)
	// startProc adds --port 0 --dir <dir>, after which our flags follow.
	p := mustStart(t, dir, "--config", conf, "--slowlog-max-len", "9")
	c := p.client(t)
	got := c.ConfigGet(ctx, "slowlog-*").Val()
	if got["slowlog-log-slower-than"] != "5" || got["slowlog-max-len"] != "9" {
		t.Errorf("CONFIG GET slowlog-* = %v, want 5 from the file and 9 from the flag", got)
	}
	if port := c.ConfigGet(ctx, "port").Val()["port"]; port != "0" {
		t.Errorf("port = %s: the --port flag did not override the file", port)
	}
	if err := c.ConfigSet(ctx, "slowlog-max-len", "3").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "slowlog-max-len").Val()["slowlog-max-len"]; v != "3" {
		t.Errorf("after CONFIG SET slowlog-max-len = %s", v)
	}
	if err := c.ConfigSet(ctx, "metrics-addr", "127.0.0.1:1").Err(); err == nil ||
		!strings.Contains(err.Error(), "can't set immutable config") {
		t.Errorf("CONFIG SET of an immutable directive: %v", err)
	}
	// The file's metrics-addr started the Prometheus endpoint.
	m := regexp.MustCompile(`metrics at (http://\S+)`).FindStringSubmatch(p.log.String())
	if m == nil {
		t.Fatalf("no metrics endpoint in the log:\n%s", p.log)
	}
	res, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "limitdb_requests_total{command=\"config|get\"}") {
		t.Errorf("metrics lack the CONFIG GET calls:\n%.2000s", body)
	}
}

func TestConfigFileErrorsStopStartUp(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"unknown": "port 0\nno-such-directive 1\n",
		"bad":     "slowlog-max-len lots\n",
		"quotes":  "dir \"unclosed\n",
	} {
		conf := filepath.Join(dir, name+".conf")
		os.WriteFile(conf, []byte(text), 0o600)
		if _, err := startProc(t, dir, "--config", conf); err == nil || !strings.Contains(err.Error(), "config") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := startProc(t, dir, "--config", filepath.Join(dir, "missing.conf")); err == nil {
		t.Error("a missing config file was ignored")
	}
}

// TestExampleConfig: examples/limitdb.conf applies cleanly and mentions
// every directive, so it stays the documentation of all of them.
func TestExampleConfig(t *testing.T) {
	const path = "../examples/limitdb.conf"
	cfg := resp.DefaultConfig()
	if err := resp.LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	def := resp.DefaultConfig()
	text, _ := os.ReadFile(path)
	for _, d := range resp.Directives() {
		if d.Set == nil {
			continue
		}
		if got, want := d.Get(&cfg), d.Get(&def); got != want {
			t.Errorf("the example sets %s to %q, not the default %q it claims", d.Name, got, want)
		}
		if !regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(d.Name) + ` `).Match(text) {
			t.Errorf("examples/limitdb.conf does not mention directive %q: add a line (commented out if it has no default)", d.Name)
		}
	}
}
