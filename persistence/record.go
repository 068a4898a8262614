package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Records are the change stream's unit (replication/doc.go): one RESP array
// of bulk strings each. A replica reads them from its primary and the
// append-only file holds them; both read them with ReadRecord.

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
	n := 0
	digits := line[1 : len(line)-2]
	neg := len(digits) > 0 && digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
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
