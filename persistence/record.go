package persistence

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/redisarg"
)

// Records are the change stream's unit (doc.go, "Change-stream records"):
// one RESP array of bulk strings each. The stream writes them with
// AppendUnit, AppendDrop and AppendCommand; a replica reads them from its
// primary and the append-only file holds them; both read them with
// ReadRecord or ParseRecord and apply them with an Applier.

// maxRecordArgs and maxRecordBytes bound what a record from a primary (or
// an append-only file) may make a replica allocate.
const (
	maxRecordArgs  = 1 << 20
	maxRecordBytes = 512 << 20
)

// ErrBadRecord is the wrapped error of a stream or an append-only file
// that is not RESP arrays of bulk strings, or of a record nobody knows.
var ErrBadRecord = errors.New("bad record")

// ReadRecord reads one record, a RESP array of bulk strings, from r, appending its
// raw bytes to raw and its arguments (slices of raw's memory) to args.
func ReadRecord(r *bufio.Reader, raw []byte, args [][]byte) ([][]byte, []byte, error) {
	if c, err := r.Peek(1); err == nil && isCompact(c[0]) {
		return readCompact(r, raw, args)
	} else if err == nil && c[0] != '*' { // not torn: no record starts so
		return args, raw, fmt.Errorf("%w: %q starts no record", ErrBadRecord, c)
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return args, raw, err
	}
	raw = append(raw, line...)
	n, err := arrayHeader(line)
	if err != nil {
		return args, raw, err
	}
	total := 0
	var small [16]int
	starts := small[:0] // where each argument begins in raw, which may move as it grows
	for i := 0; i < n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return args, raw, noEOF(err)
		}
		raw = append(raw, line...)
		l, err := bulkHeader(line, total)
		if err != nil {
			return args, raw, err
		}
		total += l
		start := len(raw)
		raw = slices.Grow(raw, l+2)[:start+l+2]
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return args, raw, noEOF(err)
		}
		if raw[len(raw)-2] != '\r' || raw[len(raw)-1] != '\n' {
			return args, raw, errNoCRLF
		}
		starts = append(starts, start, l)
	}
	for i := 0; i < len(starts); i += 2 {
		a, l := starts[i], starts[i+1]
		args = append(args, raw[a:a+l:a+l])
	}
	return args, raw, nil
}

// ParseRecord parses the record at the front of b as ReadRecord reads one,
// without copying: args are slices of b. It returns the record's length,
// or 0 and no error when b ends before the record does.
func ParseRecord(b []byte, args [][]byte) ([][]byte, int, error) {
	if len(b) > 0 && isCompact(b[0]) {
		return parseCompact(b, args)
	}
	first := len(args)
	line, off := nextLine(b, 0)
	if off == 0 {
		return args, 0, nil
	}
	n, err := arrayHeader(line)
	if err != nil {
		return args, 0, err
	}
	total := 0
	for i := 0; i < n; i++ {
		line, next := nextLine(b, off)
		if next == 0 {
			return args[:first], 0, nil
		}
		l, err := bulkHeader(line, total)
		if err != nil {
			return args[:first], 0, err
		}
		total += l
		if len(b)-next < l+2 {
			return args[:first], 0, nil
		}
		if b[next+l] != '\r' || b[next+l+1] != '\n' {
			return args[:first], 0, errNoCRLF
		}
		args = append(args, b[next:next+l:next+l])
		off = next + l + 2
	}
	return args, off, nil
}

// arrayHeader is the argument count of a record's first line.
func arrayHeader(line []byte) (int, error) {
	n, ok := headerInt(line, '*')
	if !ok || n < 1 || n > maxRecordArgs {
		return 0, fmt.Errorf("%w: %q is not an array header", ErrBadRecord, TrimLine(line))
	}
	return n, nil
}

// bulkHeader is the length of the argument a line announces, after total
// bytes of the record's earlier arguments.
func bulkHeader(line []byte, total int) (int, error) {
	l, ok := headerInt(line, '$')
	if !ok || l < 0 || l > maxRecordBytes-total {
		return 0, fmt.Errorf("%w: %q is not a bulk string header", ErrBadRecord, TrimLine(line))
	}
	return l, nil
}

// errNoCRLF is an argument whose announced length does not end at a CRLF.
var errNoCRLF = fmt.Errorf("%w: bulk string not followed by CRLF", ErrBadRecord)

// nextLine returns the line of b that starts at off, its '\n' included,
// and where the next begins; 0 when b holds no '\n' after off.
func nextLine(b []byte, off int) ([]byte, int) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		return nil, 0
	}
	return b[off : off+i+1], off + i + 1
}

// headerInt reads the number of a "<prefix><digits>\r\n" line.
func headerInt(line []byte, prefix byte) (int, bool) {
	if len(line) < 4 || line[0] != prefix || line[len(line)-2] != '\r' || len(line) > 14 {
		return 0, false
	}
	n, ok := redisarg.ParseInt(line[1 : len(line)-2])
	return int(n), ok
}

// ErrTorn is the wrapped error of a record that the input ends inside of:
// a primary that hung up mid-record, or an append-only file written up to
// a crash.
var ErrTorn = fmt.Errorf("%w: the input ends inside a record", ErrBadRecord)

// noEOF turns an end of input inside a record into ErrTorn.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTorn
	}
	return err
}

// TrimLine shortens a line for an error message.
func TrimLine(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return s
}

// The records' verbs (doc.go).
const (
	VerbApply    = "APPLY"
	VerbReset    = "RESET"
	VerbDrop     = "DROP"
	VerbSection  = "SECTION"
	VerbPing     = "PING"
	VerbReplconf = "REPLCONF"
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

// AppendArgs is AppendCommand for arguments already in bytes: a command
// for another node's client port.
func AppendArgs(b []byte, args [][]byte) []byte {
	b = appendArray(b, len(args))
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// AppendUnit appends the record of one engine unit, compact (TagApply)
// unless it empties the keyspace first (RESET) or an entry's kind does
// not fit the compact form; scratch is reused for entries and returned.
func AppendUnit(b, scratch []byte, flushed bool, changes []engine.Change) ([]byte, []byte, error) {
	if !flushed {
		var err error
		rec, ok := appendCompact(b, TagApply, func(b []byte) ([]byte, bool) {
			for i := range changes {
				c := &changes[i]
				b = binary.AppendUvarint(b, uint64(len(c.Key)))
				b = append(b, c.Key...)
				scratch = scratch[:0]
				if c.Entry.Kind != engine.KindNone {
					if scratch, err = c.Entry.AppendBinary(scratch); err != nil {
						return b, false
					}
				}
				var ok bool
				if b, ok = appendCompactEntry(b, scratch); !ok {
					return b, false
				}
			}
			return b, true
		})
		if err != nil {
			return b, scratch, err
		}
		if ok {
			return rec, scratch, nil
		}
	}
	return appendUnitRESP(b, scratch, flushed, changes)
}

// appendUnitRESP is AppendUnit's RESP form: APPLY or RESET key entry ...
func appendUnitRESP(b, scratch []byte, flushed bool, changes []engine.Change) ([]byte, []byte, error) {
	verb := VerbApply
	if flushed {
		verb = VerbReset
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

// AppendDrop appends the record of keys active expiry deleted (TagDrop).
func AppendDrop(b []byte, keys [][]byte) []byte {
	if len(keys) == 0 {
		return appendDropRESP(b, keys)
	}
	b, _ = appendCompact(b, TagDrop, func(b []byte) ([]byte, bool) {
		for _, key := range keys {
			b = binary.AppendUvarint(b, uint64(len(key)))
			b = append(b, key...)
		}
		return b, true
	})
	return b
}

// appendDropRESP is AppendDrop's RESP form: DROP key ...
func appendDropRESP(b []byte, keys [][]byte) []byte {
	b = appendArray(b, 1+len(keys))
	b = appendBulk(b, []byte(VerbDrop))
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
	Sections *Sections
	keys     [][]byte
	ents     []engine.Entry
	expanded []byte // compact entries in their AppendBinary form
}

// Apply applies one record at now. PING, SELECT and REPLCONF change
// nothing (the link answers GETACK). A record it does not know, or whose
// entries do not decode, is an error and changes nothing.
func (a *Applier) Apply(now int64, args [][]byte) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: empty record", ErrBadRecord)
	}
	verb := args[0]
	compact := len(verb) == 1 && verb[0] == TagApply
	switch {
	case len(verb) == 1 && verb[0] == TagDrop:
		verb = []byte(VerbDrop)
		fallthrough
	case EqualFold(verb, VerbDrop):
		for _, key := range args[1:] {
			put(a.Eng, key, engine.Entry{}, now)
		}
		return nil
	case compact, EqualFold(verb, VerbApply), EqualFold(verb, VerbReset):
		reset := EqualFold(verb, VerbReset)
		pairs := args[1:]
		if len(pairs)%2 != 0 {
			return fmt.Errorf("%w: %s with %d arguments", ErrBadRecord, verb, len(pairs))
		}
		a.keys, a.ents, a.expanded = a.keys[:0], a.ents[:0], a.expanded[:0]
		for i := 0; i < len(pairs); i += 2 {
			var ent engine.Entry
			bin := pairs[i+1]
			if compact { // whole: splitCompact measured it
				start := len(a.expanded)
				a.expanded = expandEntry(a.expanded, bin)
				bin = a.expanded[start:]
			}
			if len(bin) > 0 {
				e, err := DecodeEntry(bin)
				if err != nil {
					return fmt.Errorf("%w: key %q: entry does not decode: %w", ErrBadRecord, pairs[i], err)
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
	case EqualFold(verb, VerbSection):
		if len(args) != 3 {
			return fmt.Errorf("%w: SECTION with %d arguments", ErrBadRecord, len(args)-1)
		}
		return a.Sections.Load(string(args[1]), args[2])
	case EqualFold(verb, VerbPing), EqualFold(verb, VerbReplconf), EqualFold(verb, "SELECT"):
		return nil
	default:
		return fmt.Errorf("%w: unknown verb %q", ErrBadRecord, TrimLine(verb))
	}
}

// put stores ent as key's state (KindNone: deletes it).
func put(eng *engine.Engine, key []byte, ent engine.Entry, now int64) {
	eng.Do(key, now, func(engine.Entry) (engine.Entry, bool) { return ent, true })
}

// EqualFold reports whether b is s, ASCII case aside.
func EqualFold(b []byte, s string) bool {
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
