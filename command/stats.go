package command

import (
	"strconv"
	"time"
)

// Read-only views of the server's counters for INFO (Env.Stats) and for
// exporters (metrics/): the same figures INFO renders.

// Stats is the core's own counters at one instant.
type Stats struct {
	ConnectedClients    int   // open connections and LocalClients
	ConnectionsReceived int64 // connections accepted since start
	RejectedConnections int64 // connections refused when accepted (maxclients)
	CommandsProcessed   int64 // every command read, refused ones included, since start or CONFIG RESETSTAT
	EvictedKeys         int64 // keys maxmemory's volatile-ttl policy evicted
	ClientMemory        int64 // bytes the connections hold: unsent replies and read buffers
	ClientMaxOutput     int64 // bytes of the largest unsent replies of one connection
}

// stats reads the core's counters (Env.Stats).
func (s *Server) stats() Stats {
	total, maxOut := s.clientMemory()
	return Stats{
		ConnectedClients:    s.clients.count(),
		ConnectionsReceived: s.clients.accepted.Load(),
		RejectedConnections: s.clients.rejected.Load(),
		CommandsProcessed:   s.clients.commands.Load(),
		EvictedKeys:         s.guard.mem.evicted.Load(),
		ClientMemory:        total,
		ClientMaxOutput:     maxOut,
	}
}

// clientMemory is what the connections hold (replies not sent, read
// buffers) and the largest unsent replies of one.
func (s *Server) clientMemory() (total, maxOut int64) {
	for _, c := range s.clients.list() {
		if c.conn != nil {
			total += c.conn.Memory()
			maxOut = max(maxOut, c.conn.OutputMemory())
		}
	}
	return total, maxOut
}

// resetStats zeroes the command statistics and the commands processed,
// and runs what families added with OnResetStat (Env.ResetStats).
func (s *Server) resetStats() {
	var each func(cmds []*Command)
	each = func(cmds []*Command) {
		for _, cmd := range cmds {
			cmd.stats.calls.Store(0)
			cmd.stats.usec.Store(0)
			cmd.stats.rejected.Store(0)
			cmd.stats.failed.Store(0)
			cmd.stats.admitted.Store(0)
			cmd.stats.denied.Store(0)
			for i := range cmd.stats.lat {
				cmd.stats.lat[i].Store(0)
			}
			each(cmd.Subs)
		}
	}
	each(s.table.Sorted())
	s.clients.commands.Store(0)
	for _, reset := range s.table.resetStat {
		reset()
	}
}

// CommandStat is one command's counters since start or CONFIG RESETSTAT.
type CommandStat struct {
	Command  string // "name", or "parent|sub" for a subcommand
	Calls    int64  // runs
	Usec     int64  // time its runs took, in microseconds
	Rejected int64  // refused before running: arity, a gate
	Failed   int64  // ran and answered with an error
}

// CommandStats returns the counters of every command that has run or
// been refused, ordered by name, each command's subcommands after it.
func (t *Table) CommandStats() []CommandStat {
	var out []CommandStat
	eachCommand(t, func(cmd *Command) {
		st := &cmd.stats
		if calls, rejected := st.calls.Load(), st.rejected.Load(); calls > 0 || rejected > 0 {
			out = append(out, CommandStat{cmd.Name, calls, st.usec.Load(), rejected, st.failed.Load()})
		}
	})
	return out
}

// port is the port the server listens on, or the configured one until it
// listens (Env.Port).
func (s *Server) port() int {
	if p := s.life.listenPort.Load(); p != 0 {
		return int(p)
	}
	return s.Config().Port
}

// portOf is s.port in decimal.
func portOf(s *Server) string { return strconv.Itoa(s.port()) }

// SetListenPort records the port the server listens on, which INFO shows
// (the configured one may be 0: any free port).
func (s *Server) SetListenPort(port int) { s.life.listenPort.Store(int64(port)) }

// Started is when the server was created.
func (s *Server) Started() time.Time { return s.life.started }

// ConnectedClients is the number of open connections.
func (s *Server) ConnectedClients() int {
	return s.clients.count()
}

// ConnectionsReceived and CommandsProcessed are INFO stats' totals.
func (s *Server) ConnectionsReceived() int64 { return s.clients.accepted.Load() }

// CommandsProcessed counts every command read, refused ones included.
func (s *Server) CommandsProcessed() int64 { return s.clients.commands.Load() }
