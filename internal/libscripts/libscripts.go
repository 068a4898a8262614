// Package libscripts reads the Lua scripts limiter libraries send, each as
// its library makes the text, from where the tests' builds and installs
// keep the libraries: the Go module cache (go-redis/redis_rate,
// ulule/limiter, throttled), tests/clients/node/node_modules after `npm ci` there
// (rate-limiter-flexible, rate-limit-redis, bottleneck) and Debian's python3-limits.
// Tests and benchmarks use it to run limitdb's native twins on the exact
// texts: each function fails its test when a text cannot be read, and for
// a library installed by npm or apt skips it outside CI (CI=true). It
// imports no limitdb package.
package libscripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// RedisRate is go-redis/redis_rate v10's script name ("allowN",
// "allowAtMost").
func RedisRate(t testing.TB, name string) string {
	return goModule(t, "github.com/go-redis/redis_rate/v10", "lua.go", "(?s)var (\\w+) = redis.NewScript\\(`(.*?)`\\)", name)
}

// Ulule is ulule/limiter v3's redis store script name ("luaIncrScript",
// "luaPeekScript").
func Ulule(t testing.TB, name string) string {
	return goModule(t, "github.com/ulule/limiter/v3", "drivers/store/redis/store.go", "(?s)(lua\\w+Script) = `(.*?)`", name)
}

// Throttled is throttled v2's goredisstore.v9 script name
// ("redisCASScript").
func Throttled(t testing.TB, name string) string {
	return goModule(t, "github.com/throttled/throttled/v2", "store/goredisstore.v9/goredisstore.go", "(?s)(redis\\w+Script)\\s*= `(.*?)`", name)
}

// RateLimiterFlexible is RateLimiterRedis's incrTtlLuaScript as JavaScript
// reads its template literal: a backslash before a newline joins the lines.
func RateLimiterFlexible(t testing.TB) string {
	src := installed(t, filepath.Join(root(), "tests/clients/node/node_modules/rate-limiter-flexible/lib/RateLimiterRedis.js"))
	m := regexp.MustCompile("(?s)const incrTtlLuaScript = `(.*?)`;").FindSubmatch(src)
	if m == nil {
		t.Fatal("libscripts: no incrTtlLuaScript in RateLimiterRedis.js")
	}
	return strings.ReplaceAll(string(m[1]), "\\\n", "")
}

// RateLimitRedis is rate-limit-redis's increment script as the library
// makes it: every line's leading white space (blank lines with it)
// dropped, the whole trimmed.
func RateLimitRedis(t testing.TB) string {
	src := installed(t, filepath.Join(root(), "tests/clients/node/node_modules/rate-limit-redis/dist/index.mjs"))
	m := regexp.MustCompile("(?s)increment: `(.*?)`").FindSubmatch(src)
	if m == nil {
		t.Fatal("libscripts: no increment script in rate-limit-redis's index.mjs")
	}
	return strings.TrimSpace(regexp.MustCompile(`(?m)^\s+`).ReplaceAllString(string(m[1]), ""))
}

// PythonLimits is python-limits' script name ("incr_expire",
// "acquire_moving_window", "moving_window") as redis-py sends it: the
// file's bytes.
func PythonLimits(t testing.TB, name string) string {
	return string(installed(t, "/usr/lib/python3/dist-packages/limits/resources/redis/lua_scripts/"+name+".lua"))
}

// bottleneckScripts are bottleneck 2.19.5's scripts (lib/Scripts.js's
// templates): the headers each is made of after refs.lua, and whether
// refresh_expiration.lua follows them.
var bottleneckScripts = map[string]struct {
	headers []string
	refresh bool
}{
	"init":                {[]string{"process_tick"}, true},
	"group_check":         {nil, false},
	"register_client":     {[]string{"validate_keys"}, false},
	"blacklist_client":    {[]string{"validate_keys", "validate_client"}, false},
	"heartbeat":           {[]string{"validate_keys", "validate_client", "process_tick"}, false},
	"update_settings":     {[]string{"validate_keys", "validate_client", "process_tick"}, true},
	"running":             {[]string{"validate_keys", "validate_client", "process_tick"}, false},
	"queued":              {[]string{"validate_keys", "validate_client"}, false},
	"done":                {[]string{"validate_keys", "validate_client", "process_tick"}, false},
	"check":               {[]string{"validate_keys", "validate_client", "process_tick", "conditions_check"}, false},
	"submit":              {[]string{"validate_keys", "validate_client", "process_tick", "conditions_check"}, true},
	"register":            {[]string{"validate_keys", "validate_client", "process_tick", "conditions_check"}, true},
	"free":                {[]string{"validate_keys", "validate_client", "process_tick"}, true},
	"current_reservoir":   {[]string{"validate_keys", "validate_client", "process_tick"}, false},
	"increment_reservoir": {[]string{"validate_keys", "validate_client", "process_tick"}, true},
}

// BottleneckNames are the names of bottleneck's scripts.
func BottleneckNames() []string {
	names := make([]string, 0, len(bottleneckScripts))
	for name := range bottleneckScripts {
		names = append(names, name)
	}
	return names
}

// Bottleneck is bottleneck 2.19.5's script name as its Scripts.payload
// makes it from lib/lua.json: refs.lua, the script's headers, an empty
// line or refresh_expiration.lua, and its own file, joined by newlines.
func Bottleneck(t testing.TB, name string) string {
	tmpl, ok := bottleneckScripts[name]
	if !ok {
		t.Fatalf("libscripts: bottleneck has no script %q", name)
	}
	var lua map[string]string
	src := installed(t, filepath.Join(root(), "tests/clients/node/node_modules/bottleneck/lib/lua.json"))
	if err := json.Unmarshal(src, &lua); err != nil {
		t.Fatalf("libscripts: bottleneck's lua.json: %v", err)
	}
	parts := []string{lua["refs.lua"]}
	for _, h := range tmpl.headers {
		parts = append(parts, lua[h+".lua"])
	}
	refresh := ""
	if tmpl.refresh {
		refresh = lua["refresh_expiration.lua"]
	}
	parts = append(parts, refresh, lua[name+".lua"])
	return strings.Join(parts, "\n")
}

// Load is a benchmark's load of one script: its text as the library sends
// it and the arguments after the key that bench/scripts.sh gives it. A nil
// Body makes Args CL.THROTTLE's: the ceiling, one command doing one
// limiter's work on the same keys.
type Load struct {
	Name string
	Body func(t testing.TB) string
	Args []string
}

// NativeLoads are the library scripts limitdb runs natively that the
// in-process benchmarks run (command/scripts' BenchmarkNativeScripts, node's
// BenchmarkPipelineScripts, scripting/twins' BenchmarkTwins), and
// CL.THROTTLE.
func NativeLoads() []Load {
	return []Load{
		{"redis_rate.allowN", func(t testing.TB) string { return RedisRate(t, "allowN") }, []string{"1000", "1000", "60", "1"}},
		{"ulule.incr", func(t testing.TB) string { return Ulule(t, "luaIncrScript") }, []string{"1", "60000"}},
		{"flexible.incrTtl", RateLimiterFlexible, []string{"1", "60", "100", "60"}},
		{"CL.THROTTLE", nil, []string{"99", "1000", "60"}},
	}
}

// installed is the bytes of path, a file of a package CI installs (npm
// ci, apt): without it t fails in CI (CI=true) and skips elsewhere.
func installed(t testing.TB, path string) []byte {
	t.Helper()
	src, err := os.ReadFile(path)
	switch {
	case err == nil:
		return src
	case os.Getenv("CI") == "true":
		t.Fatalf("CI: a library is not installed: %v", err)
	default:
		t.Skipf("a library is not installed (npm ci in tests/clients/node, apt install python3-limits): %v", err)
	}
	return nil
}

// goModule is the script named name that file of module declares, read
// from the module cache: pattern's first group is a script's name, its
// second the text.
func goModule(t testing.TB, module, file, pattern, name string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("libscripts: go list %s: %v", module, err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), file))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(string(src), -1) {
		if m[1] == name {
			return m[2]
		}
	}
	t.Fatalf("libscripts: no script %q in %s's %s", name, module, file)
	return ""
}

// root is the repository's directory, two above this file's.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
