package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// The stream's verbs (doc.go).
const (
	verbApply    = "APPLY"
	verbReset    = "RESET"
	verbSection  = "SECTION"
	verbPing     = "PING"
	verbReplconf = "REPLCONF"
)

// appendArray appends a RESP array header of n elements.
func appendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulk appends a RESP bulk string.
func appendBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
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

// maxRecordArgs and maxRecordBytes bound what a record from a primary (or
// an append-only file) may make a replica allocate.
const (
	maxRecordArgs  = 1 << 20
	maxRecordBytes = 512 << 20
)

// errBadRecord is the wrapped error of a stream that is not RESP arrays of
// bulk strings.
var errBadRecord = errors.New("bad record")

// readRecord reads one RESP array of bulk strings from r. It returns the
// arguments (fresh memory), the record's raw bytes appended to raw, and
// its length in bytes.
func readRecord(r *bufio.Reader, raw []byte) (args [][]byte, out []byte, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, raw, err
	}
	raw = append(raw, line...)
	if len(line) < 4 || line[0] != '*' || line[len(line)-2] != '\r' {
		return nil, raw, fmt.Errorf("%w: %q is not an array header", errBadRecord, trimLine(line))
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < 1 || n > maxRecordArgs {
		return nil, raw, fmt.Errorf("%w: array of %q elements", errBadRecord, trimLine(line[1:]))
	}
	args = make([][]byte, 0, min(n, 64))
	total := 0
	for i := 0; i < n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, raw, noEOF(err)
		}
		raw = append(raw, line...)
		if len(line) < 4 || line[0] != '$' || line[len(line)-2] != '\r' {
			return nil, raw, fmt.Errorf("%w: %q is not a bulk string header", errBadRecord, trimLine(line))
		}
		l, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil || l < 0 || l > maxRecordBytes-total {
			return nil, raw, fmt.Errorf("%w: bulk string of %q bytes", errBadRecord, trimLine(line[1:]))
		}
		total += l
		start := len(raw)
		raw = append(raw, make([]byte, l+2)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return nil, raw, noEOF(err)
		}
		if raw[len(raw)-2] != '\r' || raw[len(raw)-1] != '\n' {
			return nil, raw, fmt.Errorf("%w: bulk string not followed by CRLF", errBadRecord)
		}
		args = append(args, raw[start:len(raw)-2:len(raw)-2])
	}
	return args, raw, nil
}

// noEOF turns an end of stream inside a record into an unexpected one.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the stream ends inside a record", errBadRecord)
	}
	return err
}

func trimLine(b []byte) string {
	s := strings.TrimRight(string(b), "\r\n")
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return s
}

// Apply applies one record of the stream to eng at now, and a SECTION
// record to sections. PING and REPLCONF are no-ops here (the link answers
// GETACK). A record it does not know, or whose entries do not decode, is
// an error and changes nothing.
func Apply(eng *engine.Engine, sections *persistence.Sections, now int64, args [][]byte) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: empty record", errBadRecord)
	}
	switch verb := strings.ToUpper(string(args[0])); verb {
	case verbApply, verbReset:
		pairs := args[1:]
		if len(pairs)%2 != 0 {
			return fmt.Errorf("%w: %s with %d arguments", errBadRecord, verb, len(pairs))
		}
		keys := make([][]byte, 0, len(pairs)/2)
		ents := make([]engine.Entry, 0, len(pairs)/2)
		for i := 0; i < len(pairs); i += 2 {
			var ent engine.Entry
			if len(pairs[i+1]) > 0 {
				e, n, err := engine.DecodeEntry(pairs[i+1])
				if err != nil || n != len(pairs[i+1]) {
					return fmt.Errorf("%w: key %q: entry does not decode (%v)", errBadRecord, pairs[i], err)
				}
				ent = e
			}
			keys, ents = append(keys, pairs[i]), append(ents, ent)
		}
		put := func(tx *engine.Engine) {
			if verb == verbReset {
				tx.Flush()
			}
			for i, key := range keys {
				ent := ents[i]
				tx.Do(key, now, func(engine.Entry) (engine.Entry, bool) { return ent, true })
			}
		}
		if verb == verbApply && len(keys) == 1 {
			put(eng)
			return nil
		}
		eng.Exclusive(keys, verb == verbReset, put)
		return nil
	case verbSection:
		if len(args) != 3 {
			return fmt.Errorf("%w: SECTION with %d arguments", errBadRecord, len(args)-1)
		}
		return sections.Load(string(args[1]), args[2])
	case verbPing, verbReplconf, "SELECT":
		return nil
	default:
		return fmt.Errorf("%w: unknown verb %q", errBadRecord, trimLine(args[0]))
	}
}
