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

// libraryScripts reads the Lua scripts a Go module declares with
// redis.NewScript(`...`) in file, from the module cache: the exact texts
// the library sends.
func libraryScripts(t *testing.T, module, file string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	require.NoError(t, err, "go list %s", module)
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), file))
	require.NoError(t, err)
	scripts := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)var (\\w+) = redis.NewScript\\(`(.*?)`\\)").FindAllStringSubmatch(string(src), -1) {
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
	scripts := libraryScripts(t, "github.com/go-redis/redis_rate/v10", "lua.go")
	require.Len(t, scripts, 2)
	ts := startServer(t)
	c := ts.client(t, 2)
	want := map[string]string{"allowN": "f52a5b566060d79fd321d695df55bc918339c4aa", "allowAtMost": "054143318f521948424aa25df61d7f7ba835a9d7"}
	rng := rand.New(rand.NewSource(1))
	for name, body := range scripts {
		sum := sha1.Sum([]byte(body))
		require.Equal(t, want[name], hex.EncodeToString(sum[:]), "redis_rate's %s changed: its native twin no longer applies", name)
		sha, err := c.ScriptLoad(ctx, body).Result()
		require.NoError(t, err)
		for round := 0; round < 300; round++ {
			args := []any{rng.Intn(20), 1 + rng.Intn(50), []int{1, 60, 3600}[rng.Intn(3)], rng.Intn(8)}
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
		_, err1 := c.EvalSha(ctx, sha, []string{"n:" + name}, 1, 1, 1, 1).Result()
		_, err2 := c.Eval(ctx, body+"\n", []string{"l:" + name}, 1, 1, 1, 1).Result()
		require.Error(t, err1, "a value that is not a number fails, through the interpreter")
		require.Equal(t, strings.Split(err2.Error(), " script: ")[0], strings.Split(err1.Error(), " script: ")[0])
	}
	info := c.Info(ctx, "scripting").Val()
	require.Regexp(t, `native_redis_rate\.allowN:sha=f52a5b566060d79fd321d695df55bc918339c4aa,runs=[1-9]`, info)
	require.Regexp(t, `native_redis_rate\.allowAtMost:sha=054143318f521948424aa25df61d7f7ba835a9d7,runs=[1-9]`, info)
}
