package tests

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/stretchr/testify/require"
)

// TestMalformedFrames sends hostile frames, each on its own connection,
// while a bystander connection keeps a limiter key in use: every bad frame
// gets a Redis-style error or a clean close, the commands before it in the
// same write still run, and the bystander's replies stay exact throughout.
func TestMalformedFrames(t *testing.T) {
	t.Parallel()
	ts, logs := startWith(t, func(c *config.Config) {
		c.MaxBulkLen = 1 << 20
		c.MaxArgs = 1000
	}, nil)
	bystander := dialRaw(t, ts.addr)
	taken := 0
	checkBystander := func(step string) {
		t.Helper()
		bystander.send(cmd("CL.THROTTLE", "bystander", "1000", "1", "3600"))
		want := []string{"*5", ":0", ":1001", ":" + strconv.Itoa(1000-taken), ":-1"}
		for i, w := range want {
			if got := bystander.mustLine(); got != w {
				t.Fatalf("%s: bystander reply line %d = %q, want %q", step, i, got, w)
			}
		}
		bystander.mustLine() // reset_after
		taken++
	}
	huge := "9223372036854775806" // overflowed redcon's index arithmetic into a panic
	cases := []struct {
		name  string
		send  string
		want  []string // reply lines, in order
		close bool     // the server closes the connection after them
	}{
		{"bulk length overflowing int64 arithmetic", "*2\r\n$4\r\nPING\r\n$" + huge + "\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"bulk length beyond int64", "*1\r\n$99999999999999999999999\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"bulk length over proto-max-bulk-len", "*2\r\n$4\r\nECHO\r\n$1048577\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"negative bulk length", "*2\r\n$4\r\nECHO\r\n$-5\r\nhello\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"null bulk in a request", "*2\r\n$4\r\nECHO\r\n$-1\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"non-numeric bulk length", "*1\r\n$abc\r\nPING\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"empty bulk length", "*1\r\n$\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"multibulk count beyond int64", "*99999999999999999999999\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"multibulk count over the limit", "*1001\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"absurd multibulk count, refused at once", "*1000000000000\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"negative multibulk count: ignored, as Redis does", "*-3\r\n" + cmd("PING"), []string{"+PONG"}, false},
		{"zero multibulk count: ignored, as Redis does", "*0\r\n" + cmd("PING"), []string{"+PONG"}, false},
		{"non-numeric multibulk count", "*x\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"count without CR", "*1\n$4\r\nPING\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"missing dollar", "*1\r\n:4\r\nPING\r\n", []string{"-ERR Protocol error: expected '$', got ':'"}, true},
		{"binary junk instead of dollar", "*1\r\n\x00\xff\xfe", []string{"-ERR Protocol error: expected '$', got '\\x00'"}, true},
		{"bulk longer than declared", "*1\r\n$2\r\nPING\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"inline line over 64 KiB", strings.Repeat("a", 70000), []string{"-ERR Protocol error: too big inline request"}, true},
		{"good commands before a bad frame still run", cmd("PING") + cmd("ECHO", "hi") + "*1\r\n$x\r\n", []string{"+PONG", "$2", "hi", "-ERR Protocol error: invalid bulk length"}, true},
		{"unbalanced quotes inline", "ECHO \"abc\r\n", []string{"-ERR Protocol error: unbalanced quotes in request"}, true},
		{"inline binary junk is an unknown command", "\x01\x02\x03\r\n", []string{"-ERR unknown command '\x01\x02\x03', with args beginning with: "}, false},
		{"empty lines are ignored", "\r\n\r\n\n" + cmd("PING"), []string{"+PONG"}, false},
		{"wrong arity keeps the connection", cmd("CL.THROTTLE", "k"), []string{"-ERR wrong number of arguments for 'cl.throttle' command"}, false},
		{"key over max-key-len", cmd("EXISTS", strings.Repeat("k", 65537)), []string{"-ERR key is too long (65537 bytes; max-key-len is 65536)"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkBystander("before")
			r := dialRaw(t, ts.addr)
			r.send(tc.send)
			for i, w := range tc.want {
				if got := r.mustLine(); got != w {
					t.Fatalf("reply line %d = %q, want %q", i, got, w)
				}
			}
			if tc.close {
				if !r.closed() {
					t.Errorf("connection still open after a protocol error")
				}
			} else {
				r.send(cmd("PING"))
				if got := r.mustLine(); got != "+PONG" {
					t.Errorf("connection not usable afterwards: %q", got)
				}
			}
			checkBystander("after")
		})
	}
	// Truncated frames: the client sends part of a command and hangs up.
	// Each is cut at every byte of a real pipeline.
	pipeline := cmd("CL.THROTTLE", "trunc", "5", "10", "60") + cmd("ECHO", "abc") + "PING\r\n"
	for cut := 1; cut < len(pipeline); cut++ {
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		nc.Write([]byte(pipeline[:cut]))
		nc.Close()
	}
	checkBystander("after truncations")
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("server logged a panic:\n%s", logs.String())
	}
}

// TestClientLimits drives each client limit through its directive: the
// limit's error or close, and the server still serving afterwards.
func TestClientLimits(t *testing.T) {
	t.Parallel()
	t.Run("maxclients", func(t *testing.T) {
		ts, _ := startWith(t, func(c *config.Config) { c.MaxClients = 2 }, nil)
		a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
		a.send(cmd("PING"))
		b.send(cmd("PING"))
		a.mustLine()
		b.mustLine()
		c := dialRaw(t, ts.addr)
		if got := c.mustLine(); got != "-ERR max number of clients reached" {
			t.Fatalf("third client: %q", got)
		}
		if !c.closed() {
			t.Error("refused client left open")
		}
		a.send(cmd("CONFIG", "SET", "maxclients", "3"))
		if got := a.mustLine(); got != "+OK" {
			t.Fatal(got)
		}
		d := dialRaw(t, ts.addr)
		d.send(cmd("PING"))
		if got := d.mustLine(); got != "+PONG" {
			t.Errorf("after raising maxclients: %q", got)
		}
		a.send(cmd("INFO", "stats"))
		a.mustLine()
		info := ""
		for l, _ := a.line(); l != ""; l, _ = a.line() {
			info += l + "\n"
		}
		if !strings.Contains(info, "rejected_connections:1") {
			t.Errorf("INFO stats:\n%s", info)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ts, _ := startWith(t, nil, nil)
		a := dialRaw(t, ts.addr)
		a.send(cmd("CONFIG", "SET", "timeout", "1"))
		a.mustLine()
		idle := dialRaw(t, ts.addr)
		start := time.Now()
		if !idle.closed() { // reads wait up to 5 s each
			t.Fatal("idle client not closed")
		}
		if el := time.Since(start); el < 900*time.Millisecond || el > 4*time.Second {
			t.Errorf("closed after %v, want about 1s", el)
		}
	})
	t.Run("client-query-buffer-limit", func(t *testing.T) {
		ts, _ := startWith(t, func(c *config.Config) { c.QueryBufferLimit = 1 << 20 }, nil)
		r := dialRaw(t, ts.addr)
		arg := strings.Repeat("x", 400<<10)
		go func() { // the server stops reading; do not block the test on the write
			r.nc.Write([]byte(cmd("ECHO", arg, arg, arg)))
		}()
		if got := r.mustLine(); got != "-ERR Protocol error: client query buffer limit reached" {
			t.Fatalf("got %q", got)
		}
		if !r.closed() {
			t.Error("still open")
		}
		ok := dialRaw(t, ts.addr)
		ok.send(cmd("ECHO", arg))
		if got := ok.mustLine(); got != "$409600" {
			t.Errorf("a command under the limit: %q", got)
		}
	})
	t.Run("unauthenticated clients get small limits", func(t *testing.T) {
		ts, _ := startWith(t, func(c *config.Config) { c.RequirePass = "pw" }, nil)
		r := dialRaw(t, ts.addr)
		r.send("*11\r\n")
		if got := r.mustLine(); got != "-ERR Protocol error: unauthenticated multibulk length" {
			t.Errorf("11 args before AUTH: %q", got)
		}
		r = dialRaw(t, ts.addr)
		r.send("*2\r\n$4\r\nAUTH\r\n$20000\r\n")
		if got := r.mustLine(); got != "-ERR Protocol error: unauthenticated bulk length" {
			t.Errorf("20000-byte argument before AUTH: %q", got)
		}
		r = dialRaw(t, ts.addr)
		big := strings.Repeat("y", 20000)
		r.send(cmd("AUTH", "pw") + cmd("ECHO", big))
		if got := r.mustLine(); got != "+OK" {
			t.Fatal(got)
		}
		if got := r.mustLine(); got != "$20000" {
			t.Errorf("20000-byte argument after AUTH: %q", got)
		}
	})
	t.Run("client-write-timeout", func(t *testing.T) {
		ts, _ := startWith(t, func(c *config.Config) { c.WriteTimeout = 1 }, nil)
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		defer nc.Close()
		nc.(*net.TCPConn).SetReadBuffer(4096)
		big := strings.Repeat("z", 64<<10)
		go func() { // megabytes of replies this client will never read
			for i := 0; i < 256; i++ {
				if _, err := nc.Write([]byte(cmd("ECHO", big))); err != nil {
					return
				}
			}
		}()
		// The server gives up on the client while it is still connected.
		start := time.Now()
		for len(ts.srv.CommandServer().Clients()) == 0 && time.Since(start) < 5*time.Second {
			time.Sleep(5 * time.Millisecond) // until the server has accepted it
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(ts.srv.CommandServer().Clients()) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the server still holds a client that has not read for 10 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("max-key-len", func(t *testing.T) {
		ts, _ := startWith(t, func(c *config.Config) { c.MaxKeyLen = 8 }, nil)
		r := dialRaw(t, ts.addr)
		r.send(cmd("CL.THROTTLE", "123456789", "1", "1", "1") + cmd("DEL", "ok", "123456789") + cmd("CL.THROTTLE", "12345678", "1", "1", "1"))
		for i, want := range []string{"-ERR key is too long (9 bytes; max-key-len is 8)", "-ERR key is too long (9 bytes; max-key-len is 8)", "*5"} {
			if got := r.mustLine(); got != want {
				t.Errorf("line %d: %q, want %q", i, got, want)
			}
		}
	})
	t.Run("size directives", func(t *testing.T) {
		ts, _ := startWith(t, nil, nil)
		c := ts.client(t, 2)
		for _, tc := range []struct{ name, set, get string }{
			{"proto-max-bulk-len", "2mb", "2097152"},
			{"proto-max-bulk-len", "5k", "5000"},
			{"client-query-buffer-limit", "1gb", "1073741824"},
		} {
			if err := c.ConfigSet(ctx, tc.name, tc.set).Err(); err != nil {
				t.Fatalf("%s %s: %v", tc.name, tc.set, err)
			}
			if got := c.ConfigGet(ctx, tc.name).Val()[tc.name]; got != tc.get {
				t.Errorf("%s = %s, want %s", tc.name, got, tc.get)
			}
		}
		if err := c.ConfigSet(ctx, "proto-max-bulk-len", "lots").Err(); err == nil {
			t.Error("bad size accepted")
		}
		if err := c.ConfigSet(ctx, "maxclients", "0").Err(); err == nil {
			t.Error("maxclients 0 accepted")
		}
	})
}
