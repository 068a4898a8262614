package tests

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestNativeScriptsMatchLua: each library script limitdb runs natively
// gives what the same text gives on the Lua interpreter (the text with a
// newline added, which limitdb does not recognise), at the same instants
// from the same states: the same replies, the same values left behind,
// the same expiries. The clock is fake, so the instants are exact.
func TestNativeScriptsMatchLua(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	one := func(read func(t testing.TB) string) func(testing.TB, string) string {
		return func(t testing.TB, _ string) string { return read(t) }
	}
	for _, lib := range []struct {
		library string
		want    map[string]string // script name: SHA1 of its text
		args    func(script string) []any
		read    func(t testing.TB, name string) string // a script's text (internal/libscripts)
		fill    map[string]string                      // a script: the one that writes what it reads, run before it each round
	}{
		{"go-redis/redis_rate",
			map[string]string{"allowN": "f52a5b566060d79fd321d695df55bc918339c4aa", "allowAtMost": "054143318f521948424aa25df61d7f7ba835a9d7"},
			func(string) []any {
				return []any{rng.Intn(20), 1 + rng.Intn(50), []int{1, 60, 3600}[rng.Intn(3)], rng.Intn(8)}
			}, libscripts.RedisRate, nil},
		{"ulule/limiter",
			map[string]string{"luaIncrScript": "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", "luaPeekScript": "566f5c6a17e5fddb9a10bf389f754edd0d899c61"},
			func(string) []any { return []any{1 + rng.Intn(3), []int{0, 1000, 60000}[rng.Intn(3)]} }, libscripts.Ulule, nil},
		{"rate-limiter-flexible",
			map[string]string{"incrTtlLuaScript": "a1de965f42e177aa339706bd580f049065eca79a"},
			func(string) []any { return []any{rng.Intn(5) - 1, []int{1, 2, 60}[rng.Intn(3)], 10, 60} }, one(libscripts.RateLimiterFlexible), nil},
		{"rate-limit-redis",
			map[string]string{"increment": "895b92e1712734e1b464999be23953485475357b"},
			func(string) []any { return []any{[]int{1, 1000, 60000}[rng.Intn(3)]} }, one(libscripts.RateLimitRedis), nil},
		{"python3-limits",
			map[string]string{"incr_expire": "628bd136a573a06b346879695681af12ccef300f",
				"acquire_moving_window": "d19f37c18768a509dbf1310a257bfc35be65609f", "moving_window": "3136f0028c572d2959b5cdc5ec15b287fab6a9ff"},
			limitsArgs(rng), libscripts.PythonLimits, map[string]string{"moving_window": "acquire_moving_window"}},
		{"throttled", // old, new, ttl: the key often holds old (the numbers SET puts there every 100 rounds)
			map[string]string{"redisCASScript": "ebd682e30de074a6919bde872b507734c7c3ebe5"},
			func(string) []any { return []any{rng.Intn(4), rng.Intn(4), []int{1, 2, 60, 0, -1}[rng.Intn(5)]} }, libscripts.Throttled, nil},
	} {
		t.Run(lib.library, func(t *testing.T) { // a library not installed skips alone
			scripts := map[string]string{}
			for name := range lib.want {
				scripts[name] = lib.read(t, name)
			}
			ts := startServer(t)
			c := ts.client(t, 2)
			// A library's scripts share their keys, in the order of their
			// names: a read-only script finds what the others left.
			nk, lk := "n:"+lib.library, "l:"+lib.library
			// run sends the same script and arguments to both keys, natively
			// and on the interpreter, and requires the same reply and error
			// (but for the script's SHA1 in it).
			run := func(name string) (native, lua any) {
				sha := c.ScriptLoad(ctx, scripts[name]).Val()
				args := lib.args(name)
				native, err1 := c.EvalSha(ctx, sha, []string{nk}, args...).Result()
				lua, err2 := c.Eval(ctx, scripts[name]+"\n", []string{lk}, args...).Result()
				require.Equal(t, strings.Split(fmt.Sprint(err2), " script: ")[0], strings.Split(fmt.Sprint(err1), " script: ")[0], "%s %v", name, args)
				require.Equal(t, lua, native, "%s %v", name, args)
				return native, lua
			}
			names := slices.Sorted(maps.Keys(scripts))
			for _, name := range names {
				sum := sha1.Sum([]byte(scripts[name]))
				require.Equal(t, lib.want[name], hex.EncodeToString(sum[:]), "%s's %s changed: its native twin no longer applies", lib.library, name)
				for round := 0; round < 300; round++ {
					if round%100 == 50 { // a key that holds a number and no expiry
						require.NoError(t, c.Set(ctx, nk, "3", 0).Err())
						require.NoError(t, c.Set(ctx, lk, "3", 0).Err())
					}
					if round%100 == 75 { // and none
						require.NoError(t, c.Del(ctx, nk, lk).Err())
					}
					if f := lib.fill[name]; f != "" {
						run(f)
					}
					run(name)
					require.Equal(t, c.Get(ctx, lk).Val(), c.Get(ctx, nk).Val(), "%s round %d: values", name, round)
					require.Equal(t, c.LRange(ctx, lk, 0, -1).Val(), c.LRange(ctx, nk, 0, -1).Val(), "%s round %d: lists", name, round)
					require.Equal(t, c.PTTL(ctx, lk).Val(), c.PTTL(ctx, nk).Val(), "%s round %d: expiries", name, round)
					ts.clk.Advance(time.Duration(rng.Intn(3000)) * time.Millisecond)
				}
			}
			require.NoError(t, c.Set(ctx, nk, "not a number", 0).Err())
			require.NoError(t, c.Set(ctx, lk, "not a number", 0).Err())
			for _, name := range names {
				run(name)
			}
			info := c.Info(ctx, "scripting").Val()
			for _, sha := range lib.want {
				require.Regexp(t, `native_[a-zA-Z_.-]+:sha=`+sha+`,runs=[1-9]`, info)
			}
		})
	}
}

// limitsArgs are python-limits' arguments: incr_expire's expiry and
// amount; acquire_moving_window's timestamp (time.time(), moving on by up
// to 2 s a call), limit, expiry and amount; moving_window's start of the
// window and limit.
func limitsArgs(rng *rand.Rand) func(script string) []any {
	stamp := 1_700_000_000.0
	return func(script string) []any {
		stamp += 2 * rng.Float64()
		limit, expiry := 1+rng.Intn(4), []int{1, 2, 10}[rng.Intn(3)]
		switch script {
		case "acquire_moving_window":
			return []any{strconv.FormatFloat(stamp, 'f', 6, 64), limit, expiry, 1 + rng.Intn(2)}
		case "moving_window":
			return []any{int(stamp) - expiry, limit}
		}
		return []any{[]int{1, 2, 60}[rng.Intn(3)], 1 + rng.Intn(3)}
	}
}

// TestNativeScriptsKeepTheGates: a twin makes its script's writes without
// the checks each redis.call passes, so where one of them refuses a write
// (on a read-only replica, for a user without the script's commands, at
// maxmemory) the script runs on the interpreter instead: the same error as
// its text with a newline added gives, and nothing written.
func TestNativeScriptsKeepTheGates(t *testing.T) {
	t.Parallel()
	body := libscripts.Ulule(t, "luaIncrScript")
	same := func(t *testing.T, c *redis.Client, want string) {
		t.Helper()
		sha := c.ScriptLoad(ctx, body).Val()
		_, native := c.EvalSha(ctx, sha, []string{"n"}, 1, 60000).Result()
		_, lua := c.Eval(ctx, body+"\n", []string{"l"}, 1, 60000).Result()
		require.Error(t, native)
		require.Contains(t, native.Error(), want)
		require.Equal(t, strings.Split(lua.Error(), " script: ")[0], strings.Split(native.Error(), " script: ")[0])
		require.Zero(t, c.Exists(ctx, "n", "l").Val(), "a refused script wrote")
	}
	t.Run("replica", func(t *testing.T) {
		t.Parallel()
		p, r := startServer(t), startServer(t)
		rc := r.client(t, 2)
		replicate(t, rc, p)
		same(t, rc, "READONLY")
	})
	t.Run("user", func(t *testing.T) {
		t.Parallel()
		acl := writeACL(t, "user u on >pw ~* +@all -incrby\n")
		ts, _ := startWith(t, func(c *config.Config) { c.ACLFile = acl }, nil)
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "u", Password: "pw"})
		t.Cleanup(func() { c.Close() })
		same(t, c, "NOPERM")
	})
	t.Run("maxmemory", func(t *testing.T) {
		t.Parallel()
		ts := startServer(t)
		c := ts.client(t, 2)
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
		same(t, c, "OOM")
	})
}
