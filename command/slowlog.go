package command

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
)

// What every command costs, observed after its handler (Client.leave in
// batch.go): a latency histogram per command (INFO latencystats, the
// Prometheus endpoint), counted in the connection's batch and added to the
// command's buckets when the batch ends, and the slow log (SLOWLOG
// GET/LEN/RESET). The per-command cost is a bucket increment in the batch
// and one atomic load of the slow-log threshold; a command slower than the
// threshold takes the slow log's mutex.

func registerSlowlog(t *Table) {
	t.Register(&Command{Name: "slowlog", Arity: -2, Group: "server", Since: "0.1.0",
		Complexity: "Depends on subcommand.", Summary: "Reads and resets the log of slow commands.", Syntax: "subcommand",
		Subs: []*Command{
			{Name: "slowlog|get", Arity: -2, MaxArgs: 3, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(N) where N is the number of entries returned",
				Summary:    "Returns the newest slow-log entries (10 by default, -1 for all): id, Unix time, microseconds, arguments, client address, client name.",
				Syntax:     "[count]", Handler: cmdSlowlogGet},
			{Name: "slowlog|len", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(1)", Summary: "Returns the number of entries in the slow log.", Handler: cmdSlowlogLen},
			{Name: "slowlog|reset", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(N) where N is the number of entries", Summary: "Empties the slow log.", Handler: cmdSlowlogReset},
			{Name: "slowlog|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(1)", Summary: "Lists the SLOWLOG subcommands.", Handler: HelpFor("slowlog")},
		}})
}

// latencyBuckets is the number of histogram buckets: bucket 0 counts
// commands under 1 µs, bucket i those under 2^i µs, the last everything
// slower (2^22 µs is about 4 s).
const latencyBuckets = 24

type latencyHist [latencyBuckets]atomic.Int64

// LatencyBound is the upper bound of histogram bucket i, +Inf for the last.
func LatencyBound(i int) time.Duration {
	if i >= latencyBuckets-1 {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(1<<i) * time.Microsecond
}

// LatencyStat is one command's latency histogram: Counts[i] commands took
// less than LatencyBound(i) (and at least the bound before); not cumulative.
type LatencyStat struct {
	Command string
	Counts  [latencyBuckets]int64
	Calls   int64
	Failed  int64 // answered with an error
	Usec    int64 // total time, in microseconds
}

// LatencyStats returns the histogram of every command that has run,
// ordered by name.
func (s *Server) LatencyStats() []LatencyStat { return s.table.LatencyStats() }

// LatencyStats returns the histogram of every command that has run,
// ordered by name, each command's subcommands after it.
func (t *Table) LatencyStats() []LatencyStat {
	var out []LatencyStat
	eachCommand(t, func(cmd *Command) {
		calls := cmd.stats.calls.Load()
		if calls == 0 {
			return
		}
		st := LatencyStat{Command: cmd.Name, Calls: calls, Failed: cmd.stats.failed.Load(), Usec: cmd.stats.usec.Load()}
		for i := range st.Counts {
			st.Counts[i] = cmd.stats.lat[i].Load()
		}
		out = append(out, st)
	})
	return out
}

// Percentile is the upper bound, in microseconds, of the bucket holding
// the p-th percentile (0 < p <= 100); 0 when no command was counted.
func (st *LatencyStat) Percentile(p float64) float64 {
	var total int64
	for _, n := range st.Counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(p/100*float64(total) + 0.5)
	var seen int64
	for i, n := range st.Counts {
		if seen += n; seen >= rank && n > 0 {
			return float64(LatencyBound(i).Microseconds())
		}
	}
	return float64(LatencyBound(latencyBuckets - 2).Microseconds())
}

// logIfSlow adds a command that took d to the slow log if d reaches the
// threshold; commands read from a connection call it directly (batch.go).
func (s *Server) logIfSlow(c *Client, cmd *Command, args [][]byte, d time.Duration) {
	if t := s.slow.threshold.Load(); t >= 0 && d.Microseconds() >= t && cmd.Name != "exec" {
		s.slow.add(c, args, SecretArgs(cmd, args), clock.Time(s.env.Clock).Add(-d), d)
	}
}

// slowLog keeps the newest slow commands, newest first.
type slowLog struct {
	threshold atomic.Int64 // microseconds; negative: off
	mu        sync.Mutex
	max       int
	nextID    int64
	entries   []slowEntry // newest last
}

type slowEntry struct {
	id         int64
	at         int64 // Unix seconds
	usec       int64
	args       []string
	addr, name string
}

// configure reads the slow log's directives; New and CONFIG SET call it.
func (l *slowLog) configure(cfg config.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max = cfg.SlowlogMaxLen
	if over := len(l.entries) - l.max; over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
	l.threshold.Store(cfg.SlowlogLogSlowerThan)
}

// Redis's limits on what one entry keeps of a command.
const (
	slowMaxArgs   = 32
	slowMaxArgLen = 128
)

func (l *slowLog) add(c *Client, args [][]byte, secret []bool, start time.Time, d time.Duration) {
	e := slowEntry{at: start.Unix(), usec: d.Microseconds(), addr: c.Addr, name: c.Name()}
	for i, a := range args {
		if i == slowMaxArgs-1 && len(args) > slowMaxArgs {
			e.args = append(e.args, fmt.Sprintf("... (%d more arguments)", len(args)-i))
			break
		}
		if secret != nil && secret[i] {
			e.args = append(e.args, "(redacted)")
			continue
		}
		if len(a) > slowMaxArgLen {
			e.args = append(e.args, fmt.Sprintf("%s... (%d more bytes)", a[:slowMaxArgLen], len(a)-slowMaxArgLen))
			continue
		}
		e.args = append(e.args, string(a))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max <= 0 {
		return
	}
	e.id = l.nextID
	l.nextID++
	if len(l.entries) >= l.max {
		l.entries = append(l.entries[:0], l.entries[len(l.entries)-l.max+1:]...)
	}
	l.entries = append(l.entries, e)
}

func cmdSlowlogGet(c *Client, args [][]byte) {
	count := int64(10)
	if len(args) == 3 {
		n, err := ParseInt(args[2])
		if err != nil || n < -1 {
			c.Err("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &c.srv.slow
	l.mu.Lock()
	var out []slowEntry
	for i := len(l.entries) - 1; i >= 0 && (count < 0 || int64(len(out)) < count); i-- {
		out = append(out, l.entries[i])
	}
	l.mu.Unlock()
	c.Array(len(out))
	for _, e := range out {
		c.Array(6)
		c.Int(e.id)
		c.Int(e.at)
		c.Int(e.usec)
		c.Array(len(e.args))
		for _, a := range e.args {
			c.BulkString(a)
		}
		c.BulkString(e.addr)
		c.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *Client, _ [][]byte) {
	l := &c.srv.slow
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	c.Int(int64(n))
}

func cmdSlowlogReset(c *Client, _ [][]byte) {
	l := &c.srv.slow
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	c.OK()
}

// SecretArgs marks the arguments MONITOR and SLOWLOG show as "(redacted)",
// as Redis does: AUTH's, HELLO's after AUTH, MIGRATE's after AUTH and
// AUTH2; nil for a command without any.
func SecretArgs(cmd *Command, args [][]byte) []bool {
	var secret []bool
	mark := func(from, n int) {
		if secret == nil {
			secret = make([]bool, len(args))
		}
		for i := from; i < from+n && i < len(args); i++ {
			secret[i] = true
		}
	}
	switch cmd.Name {
	case "auth":
		mark(1, len(args))
	case "hello": // HELLO 3 AUTH user pass
		for i, a := range args {
			if i > 0 && EqualFold(a, "auth") {
				mark(i+1, len(args))
				break
			}
		}
	case "migrate":
		for i := 6; i < len(args) && !EqualFold(args[i], "keys"); i++ {
			switch {
			case EqualFold(args[i], "auth"):
				mark(i+1, 1)
				i++
			case EqualFold(args[i], "auth2"):
				mark(i+1, 2)
				i += 2
			}
		}
	}
	return secret
}
