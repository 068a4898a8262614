package ratelimit_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLeaseSteps walks CL.ACQUIRE, CL.RELEASE and CL.RENEW, and a
// concurrency policy's RL.HIT, RL.RELEASE and RL.RENEW, through time: each
// step's exact reply ("ID" stands for a generated lease id, 32 hex digits).
func TestLeaseSteps(t *testing.T) {
	t.Parallel()
	c, clk, _ := newLocal(t)
	ids := regexp.MustCompile(`\$32\r\n[0-9a-f]{32}\r\n`)
	for i, st := range []struct {
		advance time.Duration
		args    []string
		want    string
	}{
		{0, []string{"CL.ACQUIRE", "k", "2", "10s"}, "*6\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:10000\r\nID"},
		{time.Second, []string{"CL.ACQUIRE", "k", "2", "500ms", "job-7"}, "*6\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:9000\r\n$5\r\njob-7\r\n"},
		// Full: retry_after is the earliest lease's expiry, job-7's.
		{0, []string{"CL.ACQUIRE", "k", "2", "10s"}, "*6\r\n:1\r\n:2\r\n:0\r\n:500\r\n:9000\r\n$-1\r\n"},
		// A live id renews its lease, admitted though the key is full.
		{0, []string{"CL.ACQUIRE", "k", "2", "20s", "job-7"}, "*6\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:20000\r\n$5\r\njob-7\r\n"},
		{0, []string{"CL.RENEW", "k", "job-7", "1500ms"}, ":1500\r\n"},
		{0, []string{"CL.RELEASE", "k", "job-7"}, ":1\r\n"},
		{0, []string{"CL.RELEASE", "k", "job-7"}, ":0\r\n"},
		{0, []string{"CL.RENEW", "k", "job-7", "1s"}, "-NOLEASE no live lease 'job-7' on this key: it expired or was released\r\n"},
		// The generated lease was never released: its slot frees at 10 s.
		{9 * time.Second, []string{"CL.ACQUIRE", "k", "1", "1s", "x"}, "*6\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:1000\r\n$1\r\nx\r\n"},
		{0, []string{"CL.RELEASE", "k", "x"}, ":1\r\n"},
		{0, []string{"CL.RELEASE", "k", "anything"}, ":0\r\n"},
		{0, []string{"TB.TAKE", "tb", "1", "1", "1s"}, "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:1000\r\n"},
		{0, []string{"CL.ACQUIRE", "tb", "1", "1s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{0, []string{"CL.RELEASE", "tb", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{0, []string{"CL.RENEW", "tb", "x", "1s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "0", "1s"}, "-ERR limit must be at least 1, got 0\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "1", "0"}, "-ERR invalid ttl '0': must be positive\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "1", "200y"}, "-ERR invalid ttl '200y': unknown unit (use ms, s, m, h or d)\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "1", "40000d"}, "-ERR invalid ttl '40000d': longer than 100 years\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "1", "1s", ""}, "-ERR lease_id must be 1 to 256 bytes\r\n"},
		{0, []string{"CL.ACQUIRE", "k", "1", "1s", "a", "b"}, "-ERR wrong number of arguments for 'cl.acquire' command\r\n"},
		// A concurrency policy: RL.HIT acquires, RL.RELEASE releases.
		{0, []string{"RL.POLICY", "SET", "jobs", "concurrency", "1", "1m"}, "+OK\r\n"},
		{0, []string{"RL.HIT", "jobs", "u"}, "*6\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60000\r\nID"},
		{0, []string{"RL.HIT", "jobs", "u"}, "*6\r\n:1\r\n:1\r\n:0\r\n:60000\r\n:60000\r\n$-1\r\n"},
		{0, []string{"RL.RENEW", "jobs", "u", "nope"}, "-NOLEASE no live lease 'nope' on this key: it expired or was released\r\n"},
		{0, []string{"RL.RELEASE", "jobs", "u", "nope"}, ":0\r\n"},
		{0, []string{"RL.POLICY", "SET", "rate", "gcra", "1", "1m"}, "+OK\r\n"},
		{0, []string{"RL.RELEASE", "rate", "u", "x"}, "-ERR policy 'rate' holds no leases: its algorithm is not concurrency\r\n"},
	} {
		clk.Advance(st.advance)
		got := ids.ReplaceAllString(string(c.DoString(st.args...)), "ID")
		if got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

// TestLeasePolicyRoundTrip: the id RL.HIT tells is the one RL.RELEASE and
// RL.RENEW take.
func TestLeasePolicyRoundTrip(t *testing.T) {
	t.Parallel()
	c, _, _ := newLocal(t)
	c.DoString("RL.POLICY", "SET", "jobs", "concurrency", "1", "1m")
	reply := string(c.DoString("RL.HIT", "jobs", "u"))
	id := reply[strings.LastIndex(reply, "$32\r\n")+5 : len(reply)-2]
	if got := string(c.DoString("RL.RENEW", "jobs", "u", id, "2m")); got != ":120000\r\n" {
		t.Fatalf("RL.RENEW %s = %q", id, got)
	}
	if got := string(c.DoString("RL.RENEW", "jobs", "u", id)); got != ":60000\r\n" {
		t.Fatalf("RL.RENEW with the policy's period = %q", got)
	}
	if got := string(c.DoString("RL.RELEASE", "jobs", "u", id)); got != ":1\r\n" {
		t.Fatalf("RL.RELEASE = %q", got)
	}
	if got := string(c.DoString("RL.HIT", "jobs", "u")); !strings.HasPrefix(got, "*6\r\n:0\r\n") {
		t.Fatalf("after the release: %q", got)
	}
}
