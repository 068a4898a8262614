package replication

import (
	"fmt"
	"strconv"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// The stream's verbs (doc.go).
const (
	verbApply    = "APPLY"
	verbReset    = "RESET"
	verbDrop     = "DROP"
	verbSection  = "SECTION"
	verbPing     = "PING"
	verbReplconf = "REPLCONF"
)

// appendArray appends a RESP array header of n elements.
func appendArray(b []byte, n int) []byte {
	b = appendCount(append(b, '*'), n)
	return append(b, '\r', '\n')
}

// appendBulk appends a RESP bulk string.
func appendBulk(b, s []byte) []byte {
	b = appendCount(append(b, '$'), len(s))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendCount appends n >= 0 in decimal; the lengths of a record's keys
// and entries take the first two cases.
func appendCount(b []byte, n int) []byte {
	switch {
	case n < 10:
		return append(b, byte('0'+n))
	case n < 100:
		return append(b, byte('0'+n/10), byte('0'+n%10))
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// AppendCommand appends args as one RESP array of bulk strings: a record
// of the stream, or a command on the replication link.
func AppendCommand(b []byte, args ...string) []byte {
	b = appendArray(b, len(args))
	for _, a := range args {
		b = appendBulk(b, []byte(a))
	}
	return b
}

// appendUnit appends the record of one engine unit; scratch is reused for
// entries and returned.
func appendUnit(b, scratch []byte, flushed bool, changes []engine.Change) ([]byte, []byte, error) {
	verb := verbApply
	if flushed {
		verb = verbReset
	}
	b = appendArray(b, 1+2*len(changes))
	b = appendBulk(b, []byte(verb))
	for i := range changes {
		c := &changes[i]
		b = appendBulk(b, c.Key)
		scratch = scratch[:0]
		if c.Entry.Kind != engine.KindNone {
			var err error
			if scratch, err = c.Entry.AppendBinary(scratch); err != nil {
				return b, scratch, err
			}
		}
		b = appendBulk(b, scratch)
	}
	return b, scratch, nil
}

// appendDrop appends the record of keys active expiry deleted.
func appendDrop(b []byte, keys [][]byte) []byte {
	b = appendArray(b, 1+len(keys))
	b = appendBulk(b, []byte(verbDrop))
	for _, key := range keys {
		b = appendBulk(b, key)
	}
	return b
}

// Applier applies records of the stream to a keyspace and its sections,
// reusing its buffers from one record to the next: a replica's link, or
// the append-only file's replay. One goroutine uses it.
type Applier struct {
	Eng      *engine.Engine
	Sections *persistence.Sections
	keys     [][]byte
	ents     []engine.Entry
}

// Apply applies one record at now. PING, SELECT and REPLCONF change
// nothing (the link answers GETACK). A record it does not know, or whose
// entries do not decode, is an error and changes nothing.
func (a *Applier) Apply(now int64, args [][]byte) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: empty record", persistence.ErrBadRecord)
	}
	verb := args[0]
	switch {
	case equalFold(verb, verbApply), equalFold(verb, verbReset):
		reset := equalFold(verb, verbReset)
		pairs := args[1:]
		if len(pairs)%2 != 0 {
			return fmt.Errorf("%w: %s with %d arguments", persistence.ErrBadRecord, verb, len(pairs))
		}
		a.keys, a.ents = a.keys[:0], a.ents[:0]
		for i := 0; i < len(pairs); i += 2 {
			var ent engine.Entry
			if len(pairs[i+1]) > 0 {
				e, n, err := engine.DecodeEntry(pairs[i+1])
				if err != nil || n != len(pairs[i+1]) {
					return fmt.Errorf("%w: key %q: entry does not decode (%v)", persistence.ErrBadRecord, pairs[i], err)
				}
				ent = e
			}
			a.keys, a.ents = append(a.keys, pairs[i]), append(a.ents, ent)
		}
		if !reset && len(a.keys) == 1 {
			put(a.Eng, a.keys[0], a.ents[0], now)
			return nil
		}
		a.Eng.Exclusive(a.keys, reset, func(tx *engine.Engine) {
			if reset {
				tx.Flush()
			}
			for i, key := range a.keys {
				put(tx, key, a.ents[i], now)
			}
		})
		return nil
	case equalFold(verb, verbDrop):
		for _, key := range args[1:] {
			put(a.Eng, key, engine.Entry{}, now)
		}
		return nil
	case equalFold(verb, verbSection):
		if len(args) != 3 {
			return fmt.Errorf("%w: SECTION with %d arguments", persistence.ErrBadRecord, len(args)-1)
		}
		return a.Sections.Load(string(args[1]), args[2])
	case equalFold(verb, verbPing), equalFold(verb, verbReplconf), equalFold(verb, "SELECT"):
		return nil
	default:
		return fmt.Errorf("%w: unknown verb %q", persistence.ErrBadRecord, persistence.TrimLine(verb))
	}
}

// put stores ent as key's state (KindNone: deletes it).
func put(eng *engine.Engine, key []byte, ent engine.Entry, now int64) {
	eng.Do(key, now, func(engine.Entry) (engine.Entry, bool) { return ent, true })
}

// equalFold reports whether b is s, ASCII case aside.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
