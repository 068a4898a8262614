package resp

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer buffers replies in RESP2 or RESP3 until Flush. Proto selects how
// the types RESP2 lacks are written: a RESP3 map, set, double, null or
// verbatim string becomes a flat array, array, bulk string, null bulk
// string or bulk string in RESP2, as Redis writes them.
//
// After a failed Flush, Flush keeps returning that error: the connection
// is done.
type Writer struct {
	w     io.Writer
	b     []byte
	err   error
	large int // flushes in a row of more than maxKeep bytes
	Proto int // 2 or 3
}

// A Flush keeps its buffer for reuse up to maxKeep bytes, so that one
// large reply does not hold memory for the life of the connection; and
// up to maxKeepLarge while the flushes stay that large (a replica's link,
// MONITOR), so that a steady flow does not grow a new buffer every time.
const (
	maxKeep      = 64 << 10
	maxKeepLarge = 4 << 20
)

// NewWriter writes replies to w in RESP2.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, Proto: 2} }

// Flush writes the buffered replies.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.b) == 0 {
		return nil
	}
	_, w.err = w.w.Write(w.b)
	if len(w.b) > maxKeep {
		w.large++
	} else {
		w.large = 0
	}
	switch {
	case w.err != nil, cap(w.b) > maxKeepLarge, cap(w.b) > maxKeep && w.large < 2:
		w.b = nil
	default:
		w.b = w.b[:0]
	}
	return w.err
}

// Buffered is the number of bytes written since the last Flush.
func (w *Writer) Buffered() int { return len(w.b) }

// Bytes returns the buffered replies, valid until the next write or Flush.
func (w *Writer) Bytes() []byte { return w.b }

// Reset drops the buffered replies.
func (w *Writer) Reset() { w.b = w.b[:0] }

// Truncate drops the buffered bytes from n on.
func (w *Writer) Truncate(n int) { w.b = w.b[:n] }

// Simple writes a simple string (+OK).
func (w *Writer) Simple(s string) { w.b = redcon.AppendString(w.b, s) }

// Error writes an error reply. msg starts with its code (ERR, WRONGTYPE);
// line breaks become spaces, so the reply stays one line.
func (w *Writer) Error(msg string) { w.b = redcon.AppendError(w.b, msg) }

// Int writes an integer.
func (w *Writer) Int(n int64) { w.b = AppendInt(w.b, n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) { w.b = redcon.AppendBulk(w.b, b) }

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) { w.b = redcon.AppendBulkString(w.b, s) }

// Array writes an array header of n elements.
func (w *Writer) Array(n int) { w.header('*', n) }

// Raw writes bytes that are already RESP.
func (w *Writer) Raw(b []byte) { w.b = append(w.b, b...) }

// Null writes the null bulk string (RESP3 null).
func (w *Writer) Null() {
	if w.Proto >= 3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "$-1\r\n"...)
}

// NullArray writes the null array (RESP3 null).
func (w *Writer) NullArray() {
	if w.Proto >= 3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "*-1\r\n"...)
}

// Map writes a map header of n pairs: a RESP3 map, or a flat array in RESP2.
func (w *Writer) Map(n int) {
	if w.Proto >= 3 {
		w.header('%', n)
		return
	}
	w.header('*', 2*n)
}

// Set writes a set header: a RESP3 set, or an array in RESP2.
func (w *Writer) Set(n int) {
	if w.Proto >= 3 {
		w.header('~', n)
		return
	}
	w.header('*', n)
}

// Push writes a push header: a RESP3 push, or an array in RESP2.
func (w *Writer) Push(n int) {
	if w.Proto >= 3 {
		w.header('>', n)
		return
	}
	w.header('*', n)
}

// Double writes a float: a RESP3 double, or a bulk string in RESP2.
func (w *Writer) Double(f float64) {
	s := strconv.FormatFloat(f, 'g', 17, 64)
	if math.IsInf(f, 1) {
		s = "inf"
	} else if math.IsInf(f, -1) {
		s = "-inf"
	}
	if w.Proto >= 3 {
		w.b = append(append(append(w.b, ','), s...), '\r', '\n')
		return
	}
	w.BulkString(s)
}

// Verbatim writes text: a RESP3 verbatim string, or a bulk string in RESP2.
func (w *Writer) Verbatim(s string) {
	if w.Proto >= 3 {
		w.b = fmt.Appendf(w.b, "=%d\r\ntxt:%s\r\n", len(s)+4, s)
		return
	}
	w.BulkString(s)
}

func (w *Writer) header(prefix byte, n int) {
	w.b = append(w.b, prefix)
	w.b = strconv.AppendInt(w.b, int64(n), 10)
	w.b = append(w.b, '\r', '\n')
}

// AppendInt appends a RESP integer, formatting the digits by hand: limiter
// replies are small numbers, and strconv's general path shows in
// BenchmarkPipeline's profile (go test -bench Pipeline ./node/).
func AppendInt(b []byte, n int64) []byte {
	var buf [24]byte
	i := len(buf) - 2
	buf[i], buf[i+1] = '\r', '\n'
	u := uint64(n)
	if n < 0 {
		u = -u
	}
	for u >= 10 {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	i--
	buf[i] = byte('0' + u)
	if n < 0 {
		i--
		buf[i] = '-'
	}
	i--
	buf[i] = ':'
	return append(b, buf[i:]...)
}
