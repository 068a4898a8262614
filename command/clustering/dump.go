package clustering

import (
	"errors"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// DUMP, RESTORE and RESTORE-ASKING move one key's value as limitdb's own
// payload (persistence/doc.go), with Redis 7's arguments, replies and
// errors. MIGRATE (migrate.go) is DUMP on this node and RESTORE on another.
//
// RESTORE's ttl is the only expiry a restored key gets, a limiter's
// included: pass the source's PTTL (MIGRATE does) and a limiter expires
// when it would have on its source. A limiter restored with ttl 0 keeps its
// state with no expiry until its next admitted request sets one from its
// limit again.

func (f *Family) registerDump(t *command.Table) {
	restore := func(name, summary string) *command.Command {
		return &command.Command{Name: name, Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagDangerous, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "0.2.0", Complexity: "O(N) where N is the size of the value", Summary: summary,
			Syntax: "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", Handler: cmdRestore}
	}
	const restoreDoc = "Creates a key from a DUMP payload (limitdb's own, not Redis's RDB form) expiring after ttl ms (0: never; " +
		"ABSTTL: at ttl, a Unix time in ms). IDLETIME and FREQ are checked and ignored: limitdb keeps no LRU or LFU data. " +
		"The entry is always checked as Redis's sanitize-dump-payload yes checks it: one whose lengths or counts do not match its bytes, " +
		"or a hash, set, sorted set or list with no elements, is refused with ERR Bad data format."
	t.Register(
		&command.Command{Name: "dump", Arity: 2, Flags: command.FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "0.2.0",
			Complexity: "O(N) where N is the size of the value",
			Summary:    "Serializes a key's value, limiter state included, in limitdb's own payload (not Redis's RDB form), without its expiry; nil when absent.",
			Syntax:     "key", Handler: cmdDump},
		restore("restore", restoreDoc),
		restore("restore-asking", "RESTORE as a migrating cluster node sends it, for a slot being imported. "+restoreDoc),
		f.migrateCommand(),
	)
}

func cmdDump(c *command.Client, args [][]byte) {
	p, _, ok, err := readDump(c.Engine(), args[1], c.Now())
	switch {
	case err != nil:
		c.Error(err)
	case !ok:
		c.Null()
	default:
		c.Bulk(p)
	}
}

// readDump returns key's payload and expiry (0: none), false when the key
// is absent. The payload is made under the key's shard lock: algorithms
// change Ext state in place.
func readDump(eng *engine.Engine, key []byte, now int64) (payload []byte, expire int64, ok bool, err error) {
	eng.Do(key, now, func(ent engine.Entry) (engine.Entry, bool) {
		if ent.Kind != engine.KindNone {
			ok, expire = true, ent.Expire
			payload, err = persistence.AppendDump(nil, ent)
		}
		return ent, false
	})
	return payload, expire, ok, err
}

// restoreArgs are RESTORE's options, after key, ttl and payload.
type restoreArgs struct {
	replace, absTTL bool
}

// parseRestoreOptions reads REPLACE, ABSTTL, IDLETIME and FREQ as Redis
// does: IDLETIME and FREQ exclude each other, and their values are checked
// though limitdb keeps no access data to put them in.
func parseRestoreOptions(opts [][]byte) (restoreArgs, error) {
	var o restoreArgs
	idle, freq := false, false
	for i := 0; i < len(opts); i++ {
		more := len(opts) - i - 1
		switch {
		case command.EqualFold(opts[i], "replace"):
			o.replace = true
		case command.EqualFold(opts[i], "absttl"):
			o.absTTL = true
		case command.EqualFold(opts[i], "idletime") && more >= 1 && !freq:
			n, err := command.ParseInt(opts[i+1])
			if err != nil {
				return o, err
			}
			if n < 0 {
				return o, command.WireError("ERR Invalid IDLETIME value, must be >= 0")
			}
			idle = true
			i++
		case command.EqualFold(opts[i], "freq") && more >= 1 && !idle:
			n, err := command.ParseInt(opts[i+1])
			if err != nil {
				return o, err
			}
			if n < 0 || n > 255 {
				return o, command.WireError("ERR Invalid FREQ value, must be >= 0 and <= 255")
			}
			freq = true
			i++
		default:
			return o, command.ErrSyntax
		}
	}
	return o, nil
}

const errBusyKey = "BUSYKEY Target key name already exists."

// cmdRestore answers RESTORE key ttl payload [options]. Its errors come in
// Redis's order: options, then BUSYKEY, then the ttl, then the payload; the
// key is looked at and written under one lock.
func cmdRestore(c *command.Client, args [][]byte) {
	o, err := parseRestoreOptions(args[4:])
	if err != nil {
		c.Error(err)
		return
	}
	now := c.Now()
	at, later := restoreExpiry(args[2], o.absTTL, now)
	ent, perr := persistence.ParseDump(args[3])
	if later == nil && perr != nil {
		later = command.WireError("ERR DUMP payload version or checksum are wrong")
		if errors.Is(perr, persistence.ErrDumpFormat) {
			later = command.WireError("ERR Bad data format")
		}
	}
	ent.Expire = at
	var busy bool
	c.Engine().Do(args[1], now, func(cur engine.Entry) (engine.Entry, bool) {
		existed := cur.Kind != engine.KindNone
		switch {
		case existed && !o.replace:
			busy = true
			return cur, false
		case later != nil:
			return cur, false
		case !ent.Live(now):
			// Already expired (ABSTTL in the past): the key is gone, as
			// Redis deletes it rather than creating it.
			return engine.Entry{}, existed
		}
		return ent, true
	})
	switch {
	case busy:
		c.Err(errBusyKey)
	case later != nil:
		c.Error(later)
	default:
		c.OK()
	}
}

// restoreExpiry is the Unix ns at which a key restored with ttl expires (0:
// never), or the error RESTORE answers for ttl.
func restoreExpiry(arg []byte, abs bool, now int64) (int64, error) {
	ttl, err := command.ParseInt(arg)
	switch {
	case err != nil:
		return 0, err
	case ttl < 0:
		return 0, command.WireError("ERR Invalid TTL value, must be >= 0")
	case ttl == 0:
		return 0, nil
	}
	at, ok := command.ExpireAtSigned(now, ttl, 1e6, abs)
	if !ok {
		return 0, command.WireError("ERR invalid expire time in 'restore' command")
	}
	return at, nil
}
