package clustering_test

import (
	"bytes"
	"encoding/binary"
	"github.com/limitdb/limitdb/command"
	"hash/crc64"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/persistence"
)

// bulkOf is a copy of the bytes of a bulk string reply.
func bulkOf(t *testing.T, reply []byte) []byte {
	t.Helper()
	head, body, ok := bytes.Cut(reply, []byte("\r\n"))
	if !ok || len(head) == 0 || head[0] != '$' {
		t.Fatalf("reply %q is not a bulk string", reply)
	}
	n, err := strconv.Atoi(string(head[1:]))
	if err != nil || n < 0 || len(body) != n+2 {
		t.Fatalf("reply %q is not a bulk string", reply)
	}
	return append([]byte(nil), body[:n]...) // the reply is the client's buffer
}

// intOf is the value of an integer reply.
func intOf(t *testing.T, reply []byte) int64 {
	t.Helper()
	if len(reply) < 3 || reply[0] != ':' {
		t.Fatalf("reply %q is not an integer", reply)
	}
	n, err := strconv.ParseInt(string(reply[1:len(reply)-2]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// do runs a command of mixed string and []byte arguments and returns a
// copy of its reply.
func do(c *command.LocalClient, args ...any) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			b[i] = []byte(a)
		case []byte:
			b[i] = a
		}
	}
	return string(c.Do(b...))
}

// TestRestoreKeepsEveryKind: a key of each kind, dumped on one server and
// restored on another at the same instant with its PTTL, reads the same
// there, and the next command answers the same on both, again after time
// passes.
func TestRestoreKeepsEveryKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup [][]string // run on the source before DUMP
		key   string
		next  []string // run on both after RESTORE, then again 1.5 s later
		read  []string // a read whose reply must match too
	}{
		{"string", [][]string{{"SET", "k", "hello", "PX", "90000"}}, "k", []string{"APPEND", "k", "x"}, []string{"GET", "k"}},
		{"counter", [][]string{{"INCRBY", "k", "41"}}, "k", []string{"INCR", "k"}, []string{"GET", "k"}},
		{"cl.throttle", [][]string{{"CL.THROTTLE", "k", "2", "3", "60"}, {"CL.THROTTLE", "k", "2", "3", "60", "2"}}, "k",
			[]string{"CL.THROTTLE", "k", "2", "3", "60"}, []string{"PTTL", "k"}},
		{"gcra", [][]string{{"GCRA", "k", "4", "2", "1.5"}}, "k", []string{"GCRA", "k", "4", "2", "1.5"}, []string{"PTTL", "k"}},
		{"tb.take", [][]string{{"TB.TAKE", "k", "5", "1", "1s", "4"}}, "k", []string{"TB.TAKE", "k", "5", "1", "1s"}, []string{"PTTL", "k"}},
		{"lb.queue", [][]string{{"LB.QUEUE", "k", "5", "2", "1s", "3"}}, "k", []string{"LB.QUEUE", "k", "5", "2", "1s"}, []string{"PTTL", "k"}},
		{"fw.incr", [][]string{{"FW.INCR", "k", "3", "10s", "2"}}, "k", []string{"FW.INCR", "k", "3", "10s"}, []string{"PTTL", "k"}},
		{"sw.incr", [][]string{{"SW.INCR", "k", "5", "2s", "3"}}, "k", []string{"SW.INCR", "k", "5", "2s"}, []string{"PTTL", "k"}},
		{"sw.incr precision", [][]string{{"SW.INCR", "k", "5", "2s", "3", "PRECISION", "4"}}, "k",
			[]string{"SW.INCR", "k", "5", "2s", "1", "PRECISION", "4"}, []string{"PTTL", "k"}},
		{"sl.incr", [][]string{{"SL.INCR", "k", "4", "2s"}, {"SL.INCR", "k", "4", "2s", "2"}}, "k", []string{"SL.INCR", "k", "4", "2s"}, []string{"PTTL", "k"}},
		{"rl.hit", [][]string{{"RL.HIT", "p", "u", "2"}}, "rl:p:u", []string{"RL.HIT", "p", "u"}, []string{"PTTL", "rl:p:u"}},
		{"hash", [][]string{{"HSET", "k", "tokens", "5", "ts", "17"}}, "k", []string{"HINCRBY", "k", "tokens", "-1"}, []string{"HGETALL", "k"}},
		{"set", [][]string{{"SADD", "k", "3", "1", "word"}}, "k", []string{"SADD", "k", "2"}, []string{"SMISMEMBER", "k", "1", "2", "3", "word", "x"}},
		{"zset", [][]string{{"ZADD", "k", "1.5", "a", "-2", "b"}}, "k", []string{"ZINCRBY", "k", "1", "b"}, []string{"ZRANGE", "k", "0", "-1", "WITHSCORES"}},
		{"list", [][]string{{"RPUSH", "k", "a", "", "c"}, {"EXPIRE", "k", "100"}}, "k", []string{"LPUSH", "k", "z"}, []string{"LRANGE", "k", "0", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, srcClk := newLocal(t)
			dst, dstClk := newLocal(t)
			for _, c := range []*command.LocalClient{src, dst} {
				if got := do(c, "RL.POLICY", "SET", "p", "sliding_window", "3", "10s"); got != "+OK\r\n" {
					t.Fatalf("RL.POLICY SET: %q", got)
				}
			}
			for _, args := range tc.setup {
				if got := string(src.DoString(args...)); got[0] == '-' {
					t.Fatalf("%q: %q", args, got)
				}
			}
			payload := bulkOf(t, src.DoString("DUMP", tc.key))
			ttl := intOf(t, src.DoString("PTTL", tc.key))
			if ttl == -1 {
				ttl = 0
			}
			if got := do(dst, "RESTORE", tc.key, strconv.FormatInt(ttl, 10), payload); got != "+OK\r\n" {
				t.Fatalf("RESTORE: %q", got)
			}
			for _, cmd := range [][]string{{"TYPE", tc.key}, {"PTTL", tc.key}, tc.read, tc.next, tc.read} {
				if a, b := string(src.DoString(cmd...)), string(dst.DoString(cmd...)); a != b {
					t.Errorf("%q: source %q, restored %q", cmd, a, b)
				}
			}
			srcClk.Advance(1500 * time.Millisecond)
			dstClk.Advance(1500 * time.Millisecond)
			for _, cmd := range [][]string{tc.next, tc.read} {
				if a, b := string(src.DoString(cmd...)), string(dst.DoString(cmd...)); a != b {
					t.Errorf("1.5 s later, %q: source %q, restored %q", cmd, a, b)
				}
			}
			if a, b := bulkOf(t, src.DoString("DUMP", tc.key)), bulkOf(t, dst.DoString("DUMP", tc.key)); !bytes.Equal(a, b) {
				t.Errorf("the payloads differ after the same commands:\n source %x\n restored %x", a, b)
			}
		})
	}
}

// TestRestoreReplies: RESTORE's and DUMP's replies and errors, in Redis's
// order of checks, and what each leaves in the keyspace.
func TestRestoreReplies(t *testing.T) {
	t.Parallel()
	c, clk := newLocal(t)
	do(c, "SET", "src", "value")
	p := bulkOf(t, c.DoString("DUMP", "src"))
	flipped := append([]byte(nil), p...)
	flipped[0] ^= 1
	// Version 2, under a checksum that matches it.
	v2 := binary.LittleEndian.AppendUint16(append([]byte(nil), p[:len(p)-10]...), persistence.DumpVersion+1)
	v2 = binary.LittleEndian.AppendUint64(v2, crc64.Checksum(v2, crc64.MakeTable(crc64.ECMA)))
	now := clk.Now() / 1e6
	for i, st := range []struct {
		args []any
		want string
	}{
		{[]any{"DUMP", "absent"}, "$-1\r\n"},
		{[]any{"RESTORE", "k", "0", p}, "+OK\r\n"},
		{[]any{"GET", "k"}, "$5\r\nvalue\r\n"},
		{[]any{"PTTL", "k"}, ":-1\r\n"},
		{[]any{"RESTORE", "k", "0", p}, "-BUSYKEY Target key name already exists.\r\n"},
		{[]any{"RESTORE", "k", "-1", "junk"}, "-BUSYKEY Target key name already exists.\r\n"}, // BUSYKEY comes first
		{[]any{"RESTORE", "k", "5000", p, "REPLACE"}, "+OK\r\n"},
		{[]any{"PTTL", "k"}, ":5000\r\n"},
		{[]any{"RESTORE", "k", "-1", p, "REPLACE"}, "-ERR Invalid TTL value, must be >= 0\r\n"},
		{[]any{"RESTORE", "k", "x", p, "REPLACE"}, "-ERR value is not an integer or out of range\r\n"},
		{[]any{"RESTORE", "k", strconv.FormatInt(now+2000, 10), p, "REPLACE", "ABSTTL"}, "+OK\r\n"},
		{[]any{"PTTL", "k"}, ":2000\r\n"},
		{[]any{"RESTORE", "k", strconv.FormatInt(now-1, 10), p, "REPLACE", "ABSTTL"}, "+OK\r\n"}, // already expired: deletes
		{[]any{"EXISTS", "k"}, ":0\r\n"},
		{[]any{"RESTORE", "k", "1", p, "ABSTTL"}, "+OK\r\n"}, // already expired: creates nothing
		{[]any{"EXISTS", "k"}, ":0\r\n"},
		{[]any{"RESTORE", "k", "0", flipped}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]any{"RESTORE", "k", "0", p[:len(p)-1]}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]any{"RESTORE", "k", "0", ""}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]any{"RESTORE", "k", "0", v2}, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{[]any{"EXISTS", "k"}, ":0\r\n"},
		{[]any{"RESTORE", "k", "0", p, "IDLETIME", "10"}, "+OK\r\n"},
		{[]any{"RESTORE", "k", "0", p, "REPLACE", "FREQ", "255"}, "+OK\r\n"},
		{[]any{"RESTORE", "k", "0", p, "REPLACE", "IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0\r\n"},
		{[]any{"RESTORE", "k", "0", p, "REPLACE", "FREQ", "256"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"},
		{[]any{"RESTORE", "k", "0", p, "REPLACE", "FREQ", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]any{"RESTORE", "k", "0", p, "IDLETIME", "1", "FREQ", "1"}, "-ERR syntax error\r\n"},
		{[]any{"RESTORE", "k", "0", p, "IDLETIME"}, "-ERR syntax error\r\n"},
		{[]any{"RESTORE", "k", "0", p, "NOPE"}, "-ERR syntax error\r\n"},
		{[]any{"RESTORE-ASKING", "k2", "0", p}, "+OK\r\n"},
		{[]any{"GET", "k2"}, "$5\r\nvalue\r\n"},
		{[]any{"RESTORE", "k"}, "-ERR wrong number of arguments for 'restore' command\r\n"},
		{[]any{"DBSIZE"}, ":3\r\n"},
	} {
		if got := do(c, st.args...); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args[:min(len(st.args), 2)], got, st.want)
		}
	}
}

// TestMigrateArguments: MIGRATE's errors that come before any connection,
// and its key positions.
func TestMigrateArguments(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	for i, st := range []struct {
		args []string
		want string
	}{
		{[]string{"MIGRATE", "127.0.0.1", "1", "absent", "0", "100"}, "+NOKEY\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS", "a", "b"}, "+NOKEY\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "KEYS", "a"}, "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "NOPE"}, "-ERR syntax error\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH"}, "-ERR syntax error\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH2", "u"}, "-ERR syntax error\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "x", "100"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "100"}, "*1\r\n$1\r\nk\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "100", "COPY", "KEYS", "a", "b"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "100", "AUTH", "keys", "KEYS", "a"}, "*1\r\n$1\r\na\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"MIGRATE", "127.0.0.1", "1", "k", "0", "100"}, "-ERR Command not allowed inside a transaction\r\n"},
		{[]string{"DISCARD"}, "+OK\r\n"},
	} {
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestMigratePasswordsRedacted: SLOWLOG keeps MIGRATE's passwords as
// "(redacted)", and its keys as they are.
func TestMigratePasswordsRedacted(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	do(c, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	do(c, "MIGRATE", "127.0.0.1", "1", "", "0", "100", "AUTH", "pw1", "AUTH2", "user", "pw2", "KEYS", "auth", "k")
	got := do(c, "SLOWLOG", "GET", "1")
	for _, secret := range []string{"pw1", "user", "pw2"} {
		if bytes.Contains([]byte(got), []byte(secret)) {
			t.Errorf("SLOWLOG shows %q: %q", secret, got)
		}
	}
	if !bytes.Contains([]byte(got), []byte("$4\r\nauth\r\n$1\r\nk\r\n")) {
		t.Errorf("SLOWLOG lost the keys: %q", got)
	}
}

// TestRestoreRefusesEmptyCollections: a payload with a valid checksum
// whose hash, set, sorted set or list has no elements is refused as Redis
// refuses a malformed one, and no key is made; a key that existed stays.
func TestRestoreRefusesEmptyCollections(t *testing.T) {
	t.Parallel()
	c, _ := newLocal(t)
	do(c, "SET", "kept", "v")
	for _, kind := range []byte{8, 9, 10, 11} { // engine.KindHash, KindSet, KindZSet, KindList
		for _, entry := range [][]byte{{kind, 0, 0, 0, 0}, {kind, 0, 0, 0, 1, 0}} {
			p := binary.LittleEndian.AppendUint16(append([]byte(nil), entry...), persistence.DumpVersion)
			p = binary.LittleEndian.AppendUint64(p, crc64.Checksum(p, crc64.MakeTable(crc64.ECMA)))
			for _, key := range []string{"new", "kept"} {
				if got := do(c, "RESTORE", key, "0", p, "REPLACE"); got != "-ERR Bad data format\r\n" {
					t.Errorf("RESTORE %s of %x = %q, want Bad data format", key, entry, got)
				}
			}
			if got := do(c, "EXISTS", "new"); got != ":0\r\n" {
				t.Errorf("after RESTORE of %x, EXISTS = %q", entry, got)
			}
			if got := do(c, "GET", "kept"); got != "$1\r\nv\r\n" {
				t.Errorf("after RESTORE REPLACE of %x, the key holds %q", entry, got)
			}
		}
	}
}
