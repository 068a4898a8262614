package tests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

func TestClThrottleOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := ts.client(t, proto)
			key := fmt.Sprint("user:", proto)
			// redis-cell's README example: 15 burst, 30 per 60 s.
			steps := []struct {
				advance time.Duration
				args    []any
				want    []int64
			}{
				{0, []any{15, 30, 60}, []int64{0, 16, 15, -1, 2}},
				{0, []any{15, 30, 60, 0}, []int64{0, 16, 15, -1, 2}}, // peek
				{0, []any{15, 30, 60, 15}, []int64{0, 16, 0, -1, 32}},
				{0, []any{15, 30, 60}, []int64{1, 16, 0, 2, 32}},
				{2 * time.Second, []any{15, 30, 60}, []int64{0, 16, 0, -1, 32}},
				{0, []any{15, 30, 60, 17}, []int64{1, 16, 0, -1, 32}}, // can never fit
			}
			for i, s := range steps {
				ts.clk.Advance(s.advance)
				args := append([]any{"CL.THROTTLE", key}, s.args...)
				got := ints(t, c.Do(ctx, args...))
				if !slices.Equal(got, s.want) {
					t.Errorf("step %d: %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestClThrottleErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	cases := []errCase{
		{[]any{"CL.THROTTLE", "k", 1, 1}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 1, 1, 1}, "ERR wrong number of arguments for 'cl.throttle' command"},
		{[]any{"CL.THROTTLE", "k", 1, 0, 60}, "ERR count must be at least 1, got 0"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 0}, "ERR period must be at least 1, got 0"},
		{[]any{"CL.THROTTLE", "k", "x", 1, 1}, "ERR max_burst must be an integer, got 'x'"},
		{[]any{"CL.THROTTLE", "k", 1, 1, "1.5"}, "ERR period must be an integer, got '1.5'"},
		{[]any{"CL.THROTTLE", "k", -1, 1, 1}, "ERR max_burst must be at least 0, got -1"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 1, -2}, "ERR quantity must be at least 0, got -2"},
		{[]any{"CL.THROTTLE", "k", 1 << 40, 1, 1 << 20}, "ERR parameters too large"},
		{[]any{"GCRA", "k", 1, 1, 0}, "ERR period must be > 0 and < 1e12"},
		{[]any{"GCRA", "k", 1, 1, 1, "TOKENS"}, "ERR Missing TOKENS value"},
		{[]any{"GCRA", "k", 1, 1, 1, "FOO", 1}, "ERR syntax error"},
		{[]any{"NOSUCH", "a"}, "ERR unknown command 'NOSUCH', with args beginning with: 'a'"},
		{[]any{"SELECT", 1}, "ERR DB index is out of range"},
	}
	expectErrors(t, c, cases, 0)
}

func TestGCRACommand(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 3)
	want := [][]int64{{0, 3, 2, -1, 1}, {0, 3, 1, -1, 1}, {0, 3, 0, -1, 1}, {1, 3, 0, 1, 1}}
	for i, w := range want {
		got := ints(t, c.Do(ctx, "GCRA", "g", 2, 10, "1.5"))
		if !slices.Equal(got, w) {
			t.Errorf("call %d: %v, want %v", i, got, w)
		}
	}
	got := ints(t, c.Do(ctx, "GCRA", "g", 2, 10, "1.5", "TOKENS", 4))
	if !slices.Equal(got, []int64{1, 3, 0, -1, 1}) {
		t.Errorf("TOKENS 4 (never fits): %v", got)
	}
}

func TestKeyExpiresWhenFresh(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.Do(ctx, "CL.THROTTLE", "k", 0, 1, 10)
	if typ := c.Type(ctx, "k").Val(); typ != "gcra" {
		t.Errorf("TYPE = %q, want gcra", typ)
	}
	if pttl := c.PTTL(ctx, "k").Val(); pttl != 10*time.Second {
		t.Errorf("PTTL = %v, want 10s", pttl)
	}
	if ttl := c.TTL(ctx, "k").Val(); ttl != 10*time.Second {
		t.Errorf("TTL = %v, want 10s", ttl)
	}
	ts.clk.Advance(10*time.Second - 1)
	if n := c.Exists(ctx, "k").Val(); n != 1 {
		t.Error("key gone before its state was fresh")
	}
	ts.clk.Advance(1)
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Error("key still there once fresh")
	}
	if pttl := c.PTTL(ctx, "k").Val(); pttl != -2*time.Nanosecond && pttl != -2 {
		t.Errorf("PTTL of absent key = %v", pttl)
	}
}

func TestKeyspaceCommands(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	for i := 0; i < 50; i++ {
		c.Do(ctx, "CL.THROTTLE", fmt.Sprintf("user:%02d", i), 5, 1, 60)
	}
	c.Do(ctx, "GCRA", "other", 5, 1, 60)
	if n := c.DBSize(ctx).Val(); n != 51 {
		t.Fatalf("DBSIZE = %d", n)
	}
	keys := c.Keys(ctx, "user:0[0-4]").Val()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"user:00", "user:01", "user:02", "user:03", "user:04"}) {
		t.Errorf("KEYS user:0[0-4] = %v", keys)
	}
	var all []string
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, "user:*", 7).Result()
		require.NoError(t, err)
		all = append(all, ks...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(all) != 50 {
		t.Errorf("SCAN MATCH user:* found %d keys, want 50", len(all))
	}
	ks, _, _ := c.ScanType(ctx, 0, "*", 1000, "string").Result()
	if len(ks) != 0 {
		t.Errorf("SCAN TYPE string found %v", ks)
	}
	if n := c.Del(ctx, "user:00", "user:01", "nope").Val(); n != 2 {
		t.Errorf("DEL = %d, want 2", n)
	}
	if n := c.Exists(ctx, "user:02", "user:02", "user:00").Val(); n != 2 {
		t.Errorf("EXISTS = %d, want 2", n)
	}
	require.NoError(t, c.FlushAll(ctx).Err())
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("after FLUSHALL DBSIZE = %d", n)
	}
}

func TestConnectionCommands(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 3)
	if v := c.Echo(ctx, "hi").Val(); v != "hi" {
		t.Errorf("ECHO = %q", v)
	}
	require.NoError(t, c.Do(ctx, "CLIENT", "SETNAME", "api-1").Err())
	if v := c.Do(ctx, "CLIENT", "GETNAME").Val(); v != "api-1" {
		t.Errorf("GETNAME = %v", v)
	}
	if err := c.Do(ctx, "CLIENT", "SETNAME", "has space").Err(); err == nil {
		t.Error("name with a space accepted")
	}
	id := c.ClientID(ctx).Val()
	info := c.ClientInfo(ctx).Val()
	if info == nil || info.ID != id || info.Name != "api-1" || info.Resp != 3 {
		t.Errorf("CLIENT INFO = %+v (id %d)", info, id)
	}
	list := c.ClientList(ctx).Val()
	if !strings.Contains(list, "name=api-1") {
		t.Errorf("CLIENT LIST lacks our name: %q", list)
	}
	tm := c.Time(ctx).Val()
	if tm.UnixNano()/1000 != t0/1000 {
		t.Errorf("TIME = %v, want the fake clock", tm)
	}
	hello := c.Do(ctx, "HELLO", 3).Val()
	m, ok := hello.(map[any]any)
	if !ok || m["proto"] != int64(3) {
		t.Errorf("HELLO 3 = %#v", hello)
	}
	if err := c.Do(ctx, "HELLO", 4).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPROTO") {
		t.Errorf("HELLO 4: %v", err)
	}
	for _, sec := range []string{"server", "clients", "memory", "stats", "keyspace", "commandstats"} {
		txt := c.Info(ctx, sec).Val()
		if !strings.HasPrefix(strings.ToLower(txt), "# "+sec) {
			t.Errorf("INFO %s starts %q", sec, txt[:min(len(txt), 30)])
		}
	}
	// The counters belong to the process's command table, so a test run
	// with -count n sees earlier runs' calls too: at least one.
	if !regexp.MustCompile(`cmdstat_echo:calls=[1-9]`).MatchString(c.Info(ctx, "commandstats").Val()) {
		t.Error("commandstats did not count ECHO")
	}
	cfg := c.ConfigGet(ctx, "*").Val()
	if cfg["appendonly"] != "no" || cfg["bind"] != "127.0.0.1" {
		t.Errorf("CONFIG GET * = %v", cfg)
	}
}

func TestCommandIntrospection(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	n := c.Do(ctx, "COMMAND", "COUNT").Val().(int64)
	all := c.Do(ctx, "COMMAND").Val().([]any)
	if int64(len(all)) != n || n < 20 {
		t.Errorf("COMMAND has %d entries, COUNT says %d", len(all), n)
	}
	info, err := c.Command(ctx).Result()
	require.NoError(t, err)
	cl := info["cl.throttle"]
	if cl == nil || cl.Arity != -5 || cl.FirstKeyPos != 1 || !slices.Contains(cl.Flags, "write") {
		t.Errorf("COMMAND INFO cl.throttle = %+v", cl)
	}
	docs := c.Do(ctx, "COMMAND", "DOCS", "cl.throttle").Val().([]any)
	if len(docs) != 2 || docs[0] != "cl.throttle" {
		t.Fatalf("COMMAND DOCS = %v", docs)
	}
	text := fmt.Sprint(docs[1])
	for _, want := range []string{"max_burst", "quantity", "optional", "rate_limit"} {
		if !strings.Contains(text, want) {
			t.Errorf("COMMAND DOCS lacks %q: %s", want, text)
		}
	}
	if err := c.Do(ctx, "CLIENT", "NOPE").Err(); err == nil || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Errorf("CLIENT NOPE: %v", err)
	}
}

func TestPipelineAnswersInOrder(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	pipe := c.Pipeline()
	var cmds []*redis.Cmd
	for i := 0; i < 100; i++ {
		cmds = append(cmds, pipe.Do(ctx, "CL.THROTTLE", "p", 9, 1, 60))
		pipe.Echo(ctx, fmt.Sprint(i))
	}
	res, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		got := ints(t, cmds[i])
		wantLimited := int64(0)
		if i >= 10 {
			wantLimited = 1
		}
		if got[0] != wantLimited {
			t.Fatalf("pipelined call %d: %v", i, got)
		}
		if echo := res[2*i+1].(*redis.StringCmd).Val(); echo != fmt.Sprint(i) {
			t.Fatalf("reply %d out of order: %q", 2*i+1, echo)
		}
	}
}

func TestRacingClientsAdmitExactlyTheLimit(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	const limit = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for g := 0; g < 16; g++ {
		c := ts.client(t, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe := c.Pipeline()
			var cmds []*redis.Cmd
			for i := 0; i < 20; i++ {
				cmds = append(cmds, pipe.Do(ctx, "CL.THROTTLE", "hot", limit-1, 1, 3600))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Error(err)
				return
			}
			for _, cmd := range cmds {
				if r := ints(t, cmd); r[0] == 0 {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted != limit {
		t.Errorf("admitted %d of 320, want exactly %d", admitted, limit)
	}
}
