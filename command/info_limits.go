package command

import (
	"fmt"
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// The limits INFO section: how many requests each limiter command admitted
// and denied. Every limiter reply goes through Client.Limit, which counts it
// against the command being run, so a new limiter command is counted without
// any code of its own.
//
//	# Limits
//	limits_admitted:12
//	limits_denied:3
//	limit_cl.throttle:admitted=10,denied=3
//	limit_tb.take:admitted=2,denied=0
//
// Families with finer counts add lines after these with ExtendInfo: the
// named policies' policy_api:admitted=5,denied=1,shadow_denied=0.

// CountLimit records a limiter decision against the running command. It
// counts in the connection's batch, which adds to the command's shared
// counters when the run of that command ends (batch.go's publish), so
// connections on different cores do not write one cache line per request.
func (c *Client) CountLimit(limited bool) {
	if limited {
		c.bt.denied++
	} else {
		c.bt.admitted++
	}
}

// LimitStat is one command's limiter decisions, for metrics exporters.
type LimitStat struct {
	Command          string
	Admitted, Denied int64
}

// LimitStats returns the decisions of every command that has made one,
// ordered by name.
func (s *Server) LimitStats() []LimitStat {
	var out []LimitStat
	eachCommand(s.table, func(cmd *Command) {
		a, d := cmd.stats.admitted.Load(), cmd.stats.denied.Load()
		if a+d > 0 {
			out = append(out, LimitStat{cmd.Name, a, d})
		}
	})
	return out
}

// eachCommand visits every command and subcommand, ordered by name.
func eachCommand(t *Table, fn func(cmd *Command)) {
	for _, cmd := range t.Sorted() {
		fn(cmd)
		for _, sub := range cmd.Subs {
			fn(sub)
		}
	}
}

func (s *Server) infoLimits(_ *engine.Engine, b *strings.Builder) {
	stats := s.LimitStats()
	var admitted, denied int64
	for _, st := range stats {
		admitted += st.Admitted
		denied += st.Denied
	}
	InfoLine(b, "limits_admitted", admitted)
	InfoLine(b, "limits_denied", denied)
	for _, st := range stats {
		fmt.Fprintf(b, "limit_%s:admitted=%d,denied=%d\r\n", st.Command, st.Admitted, st.Denied)
	}
}
