package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestStringsMatchRedis sends the same commands to redis-server and to
// limitdb and wants the same replies, errors included. Only commands whose
// replies do not depend on the clock are here (limitdb runs a fake one).
func TestStringsMatchRedis(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ours := ts.client(t, 2)
	theirs := startRedis(t)
	script := [][]any{
		{"GET", "s"}, {"SET", "s", "abc"}, {"GET", "s"}, {"INCR", "s"}, {"INCRBY", "s", 2},
		{"SET", "n", "9223372036854775806"}, {"INCR", "n"}, {"INCR", "n"}, {"GET", "n"},
		{"SET", "m", "-9223372036854775807"}, {"DECR", "m"}, {"DECR", "m"}, {"DECRBY", "m", "-9223372036854775808"},
		{"INCRBY", "m", "x"}, {"INCRBY", "m", "1.5"}, {"INCRBY", "m", "+1"}, {"INCRBY", "m", " 1"},
		{"SET", "z", "010"}, {"INCR", "z"}, {"SET", "z", " 1"}, {"INCR", "z"}, {"SET", "z", "-0"}, {"INCR", "z"},
		{"SET", "z", ""}, {"GET", "z"}, {"INCR", "z"}, {"SET", "z", "-5"}, {"INCRBY", "z", 5}, {"GET", "z"},
		{"INCR", "fresh"}, {"DECRBY", "fresh2", 7}, {"INCRBY", "fresh3", "-9223372036854775808"},
		{"SET", "k", "v", "EX", 0}, {"SET", "k", "v", "EX", -1}, {"SET", "k", "v", "PX", "9223372036854775807"},
		{"SET", "k", "v", "EXAT", 0}, {"SET", "k", "v", "EX", "x"}, {"SET", "k", "v", "NX", "XX"},
		{"SET", "k", "v", "EX", 1, "PX", 1}, {"SET", "k", "v", "KEEPTTL", "EX", 1}, {"SET", "k", "v", "FOO"},
		{"SET", "k", "v", "EX"}, {"SET", "k", "v", "EX", "x", "NX", "XX"},
		{"SETEX", "k", 0, "v"}, {"PSETEX", "k", -1, "v"}, {"SETEX", "k", "x", "v"},
		{"SET", "g", "5", "GET"}, {"SET", "g", "6", "GET"}, {"SET", "g", "7", "NX", "GET"}, {"SET", "g", "8", "XX", "GET"},
		{"SET", "nx", "1", "NX"}, {"SET", "nx", "2", "NX"}, {"GET", "nx"}, {"SET", "xx", "1", "XX"}, {"GET", "xx"},
		{"SETNX", "sn", "a"}, {"SETNX", "sn", "b"}, {"GET", "sn"},
		{"MSET", "a", 1, "b", 2, "a", 3}, {"MGET", "a", "b", "nope", "a"}, {"MSET", "a"}, {"MSET", "a", 1, "b"},
		{"MSETNX", "a", 9, "c", 9}, {"MGET", "a", "c"}, {"MSETNX", "c", 9, "d", 8}, {"MGET", "c", "d"},
		{"EXPIRE", "k", 10, "NX", "XX"}, {"EXPIRE", "k", 10, "GT", "LT"}, {"EXPIRE", "k", 10, "FOO"},
		{"EXPIRE", "k", "x"}, {"EXPIRE", "k", "9223372036854775807"}, {"EXPIRE", "absent", 10},
		{"SET", "p", "v"}, {"EXPIRETIME", "p"}, {"PEXPIRETIME", "absent"}, {"PERSIST", "p"}, {"EXPIRE", "p", 100},
		{"EXPIRE", "p", 200, "NX"}, {"EXPIRE", "p", 50, "GT"}, {"EXPIRE", "p", 500, "GT"}, {"EXPIRE", "p", 600, "LT"},
		{"EXPIRE", "p", 60, "LT"}, {"EXPIRE", "p", 70, "XX"}, {"PERSIST", "p"}, {"PERSIST", "p"}, {"TTL", "p"},
		{"EXPIRE", "p", 10, "GT"}, {"EXPIRE", "p", 10, "LT"}, {"EXPIRE", "p", 0}, {"EXISTS", "p"},
		{"SET", "q", "v"}, {"PEXPIREAT", "q", 1}, {"EXISTS", "q"}, {"SET", "q", "v", "PXAT", 1}, {"EXISTS", "q"},
		{"GET"}, {"INCR", "a", "b"}, {"SETEX", "k", 1},
		{"STRLEN", "s"}, {"STRLEN", "n"}, {"STRLEN", "z"}, {"STRLEN", "absent"}, {"STRLEN"}, {"STRLEN", "s", "n"},
	}
	for i, cmd := range script {
		want := reply(theirs.Do(ctx, cmd...).Result())
		got := reply(ours.Do(ctx, cmd...).Result())
		if got != want {
			t.Errorf("step %d %v: limitdb %s, redis %s", i, cmd, got, want)
		}
	}
}

func reply(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%T %v", v, v)
}

// TestStringExpiry walks the fake clock through expiries.
func TestStringExpiry(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 3)
	do := func(args ...any) any {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	sec := int64(time.Second)
	do("SET", "ex", "v", "EX", 10)
	do("SET", "px", "v", "PX", 1500)
	do("SET", "exat", "v", "EXAT", t0/sec+20)
	do("SET", "pxat", "v", "PXAT", t0/1e6+2500)
	do("SETEX", "setex", 5, "v")
	do("PSETEX", "psetex", 700, "v")
	do("SET", "counter", 1, "EX", 30)
	do("INCRBY", "counter", 41) // INCR keeps the expiry
	do("SET", "keep", "a", "EX", 8)
	do("SET", "keep", "b", "KEEPTTL")
	do("SET", "drop", "a", "EX", 8)
	do("SET", "drop", "b") // a plain SET forgets it
	want := map[string]int64{
		"ex": t0/1e6 + 10_000, "px": t0/1e6 + 1500, "exat": t0/1e6 + 20_000, "pxat": t0/1e6 + 2500,
		"setex": t0/1e6 + 5000, "psetex": t0/1e6 + 700, "counter": t0/1e6 + 30_000, "keep": t0/1e6 + 8000, "drop": -1,
	}
	for k, w := range want {
		if got := do("PEXPIRETIME", k); got != w {
			t.Errorf("PEXPIRETIME %s = %v, want %d", k, got, w)
		}
	}
	if got := do("EXPIRETIME", "px"); got != t0/sec+2 { // 1.5 s rounds to the nearest second
		t.Errorf("EXPIRETIME px = %v", got)
	}
	if got := do("GET", "counter"); got != "42" {
		t.Errorf("GET counter = %v", got)
	}
	ts.clk.Advance(700*time.Millisecond - 1)
	if do("EXISTS", "psetex") != int64(1) {
		t.Error("psetex gone 1 ns early")
	}
	ts.clk.Advance(1)
	if do("EXISTS", "psetex") != int64(0) {
		t.Error("psetex outlived its 700 ms")
	}
	if got := do("PTTL", "px"); got != int64(800) {
		t.Errorf("PTTL px = %v, want 800", got)
	}
	do("PEXPIRE", "px", 100, "LT")
	ts.clk.Advance(100 * time.Millisecond)
	if do("GET", "px") != nil {
		t.Error("PEXPIRE LT did not shorten px")
	}
	do("EXPIREAT", "ex", t0/sec+1)
	ts.clk.Advance(300 * time.Millisecond)
	if do("EXISTS", "ex") != int64(0) {
		t.Error("EXPIREAT in the past kept the key")
	}
	if do("PERSIST", "keep") != int64(1) || do("TTL", "keep") != int64(-1) {
		t.Error("PERSIST did not remove keep's expiry")
	}
	ts.clk.Advance(time.Hour)
	if do("GET", "keep") != "b" || do("GET", "drop") != "b" {
		t.Error("persistent keys expired")
	}
	if do("EXISTS", "counter", "exat", "pxat", "setex") != int64(0) {
		t.Error("keys outlived their expiry")
	}
}

// TestStringsAndLimiterKeys: strings and limiters share one keyspace.
func TestStringsAndLimiterKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.Do(ctx, "CL.THROTTLE", "lim", 5, 1, 60)
	for _, cmd := range [][]any{{"GET", "lim"}, {"STRLEN", "lim"}, {"INCR", "lim"}, {"SET", "lim", "x", "GET"}} {
		err := c.Do(ctx, cmd...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Errorf("%v on a limiter key: %v", cmd, err)
		}
	}
	for _, cmd := range [][]any{{"EXPIRE", "lim", 1}, {"PEXPIREAT", "lim", 1}, {"PERSIST", "lim"}} {
		err := c.Do(ctx, cmd...).Err()
		if err == nil || !strings.Contains(err.Error(), "limiter keys expire by themselves") {
			t.Errorf("%v on a limiter key: %v", cmd, err)
		}
	}
	if got := c.Do(ctx, "PEXPIRETIME", "lim").Val(); got != t0/1e6+60_000 {
		t.Errorf("PEXPIRETIME of a limiter key = %v", got)
	}
	if got := c.MGet(ctx, "lim").Val(); len(got) != 1 || got[0] != nil {
		t.Errorf("MGET of a limiter key = %v, want [nil]", got)
	}
	// SET replaces whatever the key held, as in Redis.
	require.NoError(t, c.Set(ctx, "lim", "now a string", 0).Err())
	if typ := c.Type(ctx, "lim").Val(); typ != "string" {
		t.Errorf("TYPE after SET = %q", typ)
	}
	err := c.Do(ctx, "CL.THROTTLE", "lim", 5, 1, 60).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("CL.THROTTLE on a string: %v", err)
	}
}

// TestFixedWindowCounterPattern is what fixed-window limiter libraries send:
// INCR, then EXPIRE NX on the first hit of a window.
func TestFixedWindowCounterPattern(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		c := ts.client(t, proto)
		key := fmt.Sprint("fw:", proto)
		for i := int64(1); i <= 5; i++ {
			pipe := c.Pipeline()
			incr := pipe.Incr(ctx, key)
			pipe.ExpireNX(ctx, key, time.Minute)
			pttl := pipe.PTTL(ctx, key)
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if incr.Val() != i || pttl.Val() != time.Minute {
				t.Fatalf("resp%d hit %d: INCR %d, PTTL %v", proto, i, incr.Val(), pttl.Val())
			}
		}
	}
	ts.clk.Advance(time.Minute)
	if n := ts.client(t, 2).Exists(ctx, "fw:2", "fw:3").Val(); n != 0 {
		t.Errorf("windows outlived their minute: %d keys", n)
	}
}
