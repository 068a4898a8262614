package command

import (
	"sync"
	"sync/atomic"
)

// maxmemory: the keyspace's accounted memory (engine.UsedBytes: every key's
// bytes plus its fixed cost in the table) against a limit. It is not the
// process's resident memory, which lags behind deletions by the garbage
// collector's schedule, but it falls the moment a key goes, so eviction
// stops exactly when it has done enough. Ext state (sliding logs, string
// values) is not counted.
//
// Policies: noeviction refuses commands that would create keys once over the
// limit ("OOM command not allowed ..."), while commands on keys that exist
// keep working, so clients already being limited stay limited. volatile-ttl
// evicts the keys closest to expiry (sampled, as Redis does) until under the
// limit; limiter keys all expire, so that is the state of the clients that
// would soonest have been forgotten anyway.

func registerMemory(t *Table) {
	t.SetGate(GateMemory, memoryGate)
}

// memState is the server's maxmemory bookkeeping; the limit and policy are
// copied out of the configuration so the gate reads two atomics.
type memState struct {
	once    sync.Once
	max     atomic.Int64
	evict   atomic.Bool // volatile-ttl
	evicted atomic.Int64
}

func (m *memState) load(s *Server) {
	cfg := s.Config()
	m.max.Store(cfg.MaxMemory)
	m.evict.Store(cfg.MaxMemoryPolicy == "volatile-ttl")
}

var errOOM = WireError("OOM command not allowed when used memory > 'maxmemory'.")

// evictionsPerCommand bounds the work one command does evicting, so a
// lowered limit is reached over several commands, not in one long pause.
const evictionsPerCommand = 128

// memoryLimit is what the keyspace may use: maxmemory less what the
// clients hold, which is not the keyspace's to use; limited is false
// without a maxmemory.
func (s *Server) memoryLimit() (max int64, limited bool) {
	s.guard.mem.once.Do(func() { s.guard.mem.load(s) })
	if max = s.guard.mem.max.Load(); max <= 0 {
		return 0, false
	}
	if s.ClientMemory != nil {
		max -= s.ClientMemory()
	}
	return max, true
}

func memoryGate(c *Client, cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagDenyOOM == 0 {
		return true
	}
	s := c.srv
	max, limited := s.memoryLimit()
	eng := s.env.Engine
	if !limited || eng.UsedBytes() <= max {
		return true
	}
	// Inside a transaction (EXEC, a script) the shards it holds are
	// locked: eviction, which locks the shards it samples, waits for
	// the next command outside one, and keys are read through the
	// transaction's handle.
	if s.guard.mem.evict.Load() && c.tx == nil {
		now := c.Now()
		for i := 0; i < evictionsPerCommand && eng.UsedBytes() > max; i++ {
			evicted, reaped := eng.EvictSoonest(now, 16)
			if evicted {
				s.guard.mem.evicted.Add(1)
			}
			if !evicted && !reaped {
				break
			}
		}
		if eng.UsedBytes() <= max {
			return true
		}
	}
	// Over the limit: commands on existing keys still run, unless they
	// can grow them.
	if cmd.FirstKey > 0 && cmd.Flags&FlagGrows == 0 {
		last := cmd.LastKey
		if last < 0 {
			last = len(args) + last
		}
		now := c.Now()
		all := true
		for i := cmd.FirstKey; i <= last && i < len(args); i += max1(cmd.Step) {
			if _, ok := c.Engine().Get(args[i], now); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	c.Error(errOOM)
	return false
}
