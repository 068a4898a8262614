package tests

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// libraryScripts reads the Lua scripts a Go module declares in file, from
// the module cache: the exact texts the library sends. pattern's first
// group is the name, its second the text.
func libraryScripts(t *testing.T, module, file, pattern string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	require.NoError(t, err, "go list %s", module)
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), file))
	require.NoError(t, err)
	scripts := map[string]string{}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(string(src), -1) {
		scripts[m[1]] = m[2]
	}
	return scripts
}

// TestNativeScriptsMatchLua: each library script limitdb runs natively
// gives what the same text gives on the Lua interpreter (the text with a
// newline added, which limitdb does not recognise), at the same instants
// from the same states: the same replies, the same values left behind,
// the same expiries. The clock is fake, so the instants are exact.
func TestNativeScriptsMatchLua(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	for _, lib := range []struct {
		module, file, pattern string
		want                  map[string]string // script name: SHA1 of its text
		args                  func() []any
		read                  func(t *testing.T) map[string]string // instead of module, file, pattern
	}{
		{"github.com/go-redis/redis_rate/v10", "lua.go", "(?s)var (\\w+) = redis.NewScript\\(`(.*?)`\\)",
			map[string]string{"allowN": "f52a5b566060d79fd321d695df55bc918339c4aa", "allowAtMost": "054143318f521948424aa25df61d7f7ba835a9d7"},
			func() []any {
				return []any{rng.Intn(20), 1 + rng.Intn(50), []int{1, 60, 3600}[rng.Intn(3)], rng.Intn(8)}
			}, nil},
		{"github.com/ulule/limiter/v3", "drivers/store/redis/store.go", "(?s)(lua\\w+Script) = `(.*?)`",
			map[string]string{"luaIncrScript": "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", "luaPeekScript": "566f5c6a17e5fddb9a10bf389f754edd0d899c61"},
			func() []any { return []any{1 + rng.Intn(3), []int{0, 1000, 60000}[rng.Intn(3)]} }, nil},
		{"rate-limiter-flexible", "", "",
			map[string]string{"incrTtlLuaScript": "a1de965f42e177aa339706bd580f049065eca79a"},
			func() []any { return []any{rng.Intn(5) - 1, []int{1, 2, 60}[rng.Intn(3)], 10, 60} }, flexibleScripts},
		{"rate-limit-redis", "", "",
			map[string]string{"increment": "895b92e1712734e1b464999be23953485475357b"},
			func() []any { return []any{[]int{1, 1000, 60000}[rng.Intn(3)]} }, rateLimitRedisScripts},
		{"python3-limits", "", "",
			map[string]string{"incr_expire": "628bd136a573a06b346879695681af12ccef300f"},
			func() []any { return []any{[]int{1, 2, 60}[rng.Intn(3)], 1 + rng.Intn(3)} }, limitsScripts},
	} {
		var scripts map[string]string
		if lib.read != nil {
			scripts = lib.read(t)
		} else {
			scripts = libraryScripts(t, lib.module, lib.file, lib.pattern)
		}
		if scripts == nil {
			continue
		}
		require.Len(t, scripts, len(lib.want), lib.module)
		ts := startServer(t)
		c := ts.client(t, 2)
		for name, body := range scripts {
			sum := sha1.Sum([]byte(body))
			require.Equal(t, lib.want[name], hex.EncodeToString(sum[:]), "%s's %s changed: its native twin no longer applies", lib.module, name)
			sha, err := c.ScriptLoad(ctx, body).Result()
			require.NoError(t, err)
			for round := 0; round < 300; round++ {
				if round%100 == 50 { // a key that holds a number and no expiry
					require.NoError(t, c.Set(ctx, "n:"+name, "3", 0).Err())
					require.NoError(t, c.Set(ctx, "l:"+name, "3", 0).Err())
				}
				args := lib.args()
				native, err1 := c.EvalSha(ctx, sha, []string{"n:" + name}, args...).Result()
				lua, err2 := c.Eval(ctx, body+"\n", []string{"l:" + name}, args...).Result()
				require.Equal(t, fmt.Sprint(err2), fmt.Sprint(err1), "%s %v", name, args)
				require.Equal(t, lua, native, "%s round %d %v", name, round, args)
				require.Equal(t, c.Get(ctx, "l:"+name).Val(), c.Get(ctx, "n:"+name).Val(), "%s round %d: values", name, round)
				require.Equal(t, c.PTTL(ctx, "l:"+name).Val(), c.PTTL(ctx, "n:"+name).Val(), "%s round %d: expiries", name, round)
				ts.clk.Advance(time.Duration(rng.Intn(3000)) * time.Millisecond)
			}
			require.NoError(t, c.Set(ctx, "n:"+name, "not a number", 0).Err())
			require.NoError(t, c.Set(ctx, "l:"+name, "not a number", 0).Err())
			args := lib.args()
			native, err1 := c.EvalSha(ctx, sha, []string{"n:" + name}, args...).Result()
			lua, err2 := c.Eval(ctx, body+"\n", []string{"l:" + name}, args...).Result()
			require.Equal(t, lua, native, "%s on a value that is not a number", name)
			require.Equal(t, strings.Split(fmt.Sprint(err2), " script: ")[0], strings.Split(fmt.Sprint(err1), " script: ")[0])
		}
		info := c.Info(ctx, "scripting").Val()
		for _, sha := range lib.want {
			require.Regexp(t, `native_[a-zA-Z_.-]+:sha=`+sha+`,runs=[1-9]`, info)
		}
	}
}

// flexibleScripts reads rate-limiter-flexible's script from the Node.js
// tests' modules (`npm ci` in tests/clients/node), as JavaScript reads the
// template literal: a backslash before a newline joins the lines.
func flexibleScripts(t *testing.T) map[string]string {
	src := ciFile(t, "clients/node/node_modules/rate-limiter-flexible/lib/RateLimiterRedis.js", "rate-limiter-flexible (npm ci in tests/clients/node)")
	if src == nil {
		return nil
	}
	m := regexp.MustCompile("(?s)const incrTtlLuaScript = `(.*?)`;").FindSubmatch(src)
	require.NotNil(t, m, "rate-limiter-flexible's script moved")
	return map[string]string{"incrTtlLuaScript": strings.ReplaceAll(string(m[1]), "\\\n", "")}
}

// rateLimitRedisScripts reads rate-limit-redis's increment script from the
// Node.js tests' modules, as the library makes it: every line's leading
// white space (blank lines with it) dropped, the whole trimmed.
func rateLimitRedisScripts(t *testing.T) map[string]string {
	src := ciFile(t, "clients/node/node_modules/rate-limit-redis/dist/index.mjs", "rate-limit-redis (npm ci in tests/clients/node)")
	if src == nil {
		return nil
	}
	m := regexp.MustCompile("(?s)increment: `(.*?)`").FindSubmatch(src)
	require.NotNil(t, m, "rate-limit-redis's script moved")
	body := regexp.MustCompile(`(?m)^\s+`).ReplaceAllString(string(m[1]), "")
	return map[string]string{"increment": strings.TrimSpace(body)}
}

// limitsScripts reads python-limits' fixed-window script, as redis-py
// sends it: the file's bytes.
func limitsScripts(t *testing.T) map[string]string {
	src := ciFile(t, "/usr/lib/python3/dist-packages/limits/resources/redis/lua_scripts/incr_expire.lua", "python3-limits")
	if src == nil {
		return nil
	}
	return map[string]string{"incr_expire": string(src)}
}

// ciFile reads path, a file of a library CI installs: without it, it logs
// that what needs it is not checked and returns nil, and in CI it fails.
func ciFile(t *testing.T, path, what string) []byte {
	src, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI: %s is not installed: %v", what, err)
		}
		t.Logf("%s is not installed: its twin is not checked", what)
		return nil
	}
	return src
}
