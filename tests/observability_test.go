package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// infoField finds "name:value" in INFO text.
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v, true
		}
	}
	return "", false
}

func TestInfoLimitsCountsDecisions(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.ConfigResetStat(ctx)   // command statistics are per process, shared by every test server
	for i := 0; i < 5; i++ { // burst 2: three admitted, two denied
		c.Do(ctx, "CL.THROTTLE", "k", 2, 1, 60)
	}
	c.Do(ctx, "CL.THROTTLE", "k", 2, 1, 60, 0) // a peek counts by its reply: 0 always fits
	c.Do(ctx, "GCRA", "g", 0, 1, 1)
	c.Do(ctx, "CL.THROTTLE", "k", 2, 0, 60) // an error decides nothing
	info := c.Info(ctx, "limits").Val()
	want := map[string]string{
		"limits_admitted":   "5",
		"limits_denied":     "2",
		"limit_cl.throttle": "admitted=4,denied=2",
		"limit_gcra":        "admitted=1,denied=0",
	}
	for k, w := range want {
		if got, _ := infoField(info, k); got != w {
			t.Errorf("%s = %q, want %q\n%s", k, got, w, info)
		}
	}
	// Inside a transaction, decisions count against the queued command.
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CL.THROTTLE", "k", 2, 1, 60)
		p.Do(ctx, "GCRA", "g2", 0, 1, 1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	info = c.Info(ctx, "limits").Val()
	for k, w := range map[string]string{"limit_cl.throttle": "admitted=4,denied=3", "limit_gcra": "admitted=2,denied=0"} {
		if got, _ := infoField(info, k); got != w {
			t.Errorf("after MULTI: %s = %q, want %q", k, got, w)
		}
	}
	if _, ok := infoField(info, "limit_exec"); ok {
		t.Error("EXEC counted as a limiter command")
	}
	if !strings.Contains(c.Info(ctx).Val(), "# Limits") {
		t.Error("the limits section is not among INFO's defaults")
	}
	c.ConfigResetStat(ctx)
	if got, _ := infoField(c.Info(ctx, "limits").Val(), "limits_admitted"); got != "0" {
		t.Errorf("after CONFIG RESETSTAT limits_admitted = %q", got)
	}
}

func TestSlowlog(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.Do(ctx, "CLIENT", "SETNAME", "slowpoke")
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Fatalf("SLOWLOG LEN at start = %v", n)
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "0") // log everything
	c.ConfigSet(ctx, "slowlog-max-len", "3")
	c.Do(ctx, "CL.THROTTLE", "k", 1, 1, 1)
	c.Do(ctx, "ECHO", strings.Repeat("x", 200))
	c.Do(ctx, "PING")
	c.Do(ctx, "GET", "k")
	entries, err := c.SlowLogGet(ctx, -1).Result()
	require.NoError(t, err)
	if len(entries) != 3 {
		t.Fatalf("SLOWLOG GET -1 returned %d entries", len(entries))
	}
	newest, oldest := entries[0], entries[2]
	if got := strings.Join(newest.Args, " "); got != "GET k" {
		t.Errorf("newest entry = %q", got)
	}
	if newest.ID != oldest.ID+2 || newest.ClientName != "slowpoke" || newest.ClientAddr == "" {
		t.Errorf("entries %+v / %+v", newest, oldest)
	}
	if got := oldest.Args[1]; got != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Errorf("long argument kept as %q", got)
	}
	if e := c.SlowLogGet(ctx, 1).Val(); len(e) != 1 || e[0].ID != newest.ID+1 || !strings.EqualFold(e[0].Args[0], "slowlog") {
		t.Errorf("SLOWLOG GET 1 = %+v (the previous SLOWLOG GET is logged too)", e)
	}
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(3) {
		t.Errorf("SLOWLOG LEN = %v, want 3 (the max)", n)
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "-1")
	c.Do(ctx, "SLOWLOG", "RESET")
	c.Do(ctx, "PING")
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Errorf("SLOWLOG LEN after RESET with logging off = %v", n)
	}
	if err := c.Do(ctx, "SLOWLOG", "GET", -2).Err(); err == nil {
		t.Error("SLOWLOG GET -2 accepted")
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
}

func TestLatencyStats(t *testing.T) {
	// Not parallel: it measures command latencies.
	ts := startServer(t)
	c := ts.client(t, 2)
	c.ConfigResetStat(ctx)
	for i := 0; i < 20; i++ {
		c.Do(ctx, "CL.THROTTLE", "k", 100, 1, 1)
	}
	info := c.Info(ctx, "latencystats").Val()
	v, ok := infoField(info, "latency_percentiles_usec_cl.throttle")
	if !ok || !strings.HasPrefix(v, "p50=") || !strings.Contains(v, ",p99.9=") {
		t.Errorf("latencystats = %q", info)
	}
	for _, st := range ts.srv.CommandServer().LatencyStats() {
		if st.Command != "cl.throttle" {
			continue
		}
		var n int64
		for _, k := range st.Counts {
			n += k
		}
		if n != 20 || st.Calls != 20 {
			t.Errorf("histogram holds %d of %d calls", n, st.Calls)
		}
	}
}

func TestClientKill(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	admin := ts.client(t, 2)
	victim := ts.client(t, 2)
	other := ts.client(t, 3)
	vid := victim.ClientID(ctx).Val()
	if n, err := admin.ClientKillByFilter(ctx, "ID", fmt.Sprint(vid)).Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID: %d, %v", n, err)
	}
	waitClients(t, admin, 2)
	// The old form, by address.
	info := other.ClientInfo(ctx).Val()
	if err := admin.ClientKill(ctx, info.Addr).Err(); err != nil {
		t.Fatalf("CLIENT KILL addr: %v", err)
	}
	waitClients(t, admin, 1)
	if err := admin.ClientKill(ctx, "1.2.3.4:5").Err(); err == nil || err.Error() != "ERR No such client" {
		t.Errorf("CLIENT KILL of an unknown address: %v", err)
	}
	// SKIPME yes (the default) spares the caller.
	if n := admin.ClientKillByFilter(ctx, "USER", "default").Val(); n != 0 {
		t.Errorf("CLIENT KILL USER default killed %d (only the caller matches)", n)
	}
	for _, args := range [][]any{{"ID", 0}, {"ID", "x"}, {"NOPE", 1}, {"SKIPME", "maybe"}, {"ID"}} {
		if err := admin.Do(ctx, append([]any{"CLIENT", "KILL"}, args...)...).Err(); err == nil {
			t.Errorf("CLIENT KILL %v accepted", args)
		}
	}
	require.NoError(t, admin.Ping(ctx).Err())
}

// waitClients waits (bounded) until CLIENT LIST shows n connections.
func waitClients(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if strings.Count(c.ClientList(ctx).Val(), "\n") == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("CLIENT LIST never showed %d clients: %s", n, c.ClientList(ctx).Val())
}

func TestInfoSections(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 3)
	all := c.Info(ctx, "all").Val()
	for _, sec := range []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Limits", "Replication",
		"CPU", "Commandstats", "Latencystats", "Keyspace"} {
		if !strings.Contains(all, "# "+sec+"\r\n") {
			t.Errorf("INFO all lacks # %s", sec)
		}
	}
	if v, _ := infoField(c.Info(ctx, "replication").Val(), "role"); v != "master" {
		t.Errorf("role = %q", v)
	}
	if v, _ := infoField(c.Info(ctx, "cpu").Val(), "used_cpu_user"); v == "" {
		t.Error("no used_cpu_user")
	}
}
