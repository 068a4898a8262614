package resp

import (
	"fmt"
	"io"
	"math"

	"github.com/tidwall/redcon"
)

// Command is one command as read: its raw bytes and its arguments (the
// name first). Both slice the Reader's buffer.
type Command struct {
	Raw  []byte
	Args [][]byte
}

// Limits bound what a Reader accepts; a command over a limit is a protocol
// error, found while the command is still arriving, before it is buffered
// whole (as Redis's processMultibulkBuffer does).
type Limits struct {
	MaxArgs  int   // proto-max-multibulk-len: most arguments in one command
	MaxBulk  int64 // proto-max-bulk-len: longest argument, bytes
	MaxQuery int64 // client-query-buffer-limit: longest unfinished command, bytes
	// UnauthArgs and UnauthBulk, when not 0, are the lower limits of a
	// client that has not authenticated; a length over them (and within
	// MaxArgs, MaxBulk) is Redis's "unauthenticated multibulk length" or
	// "unauthenticated bulk length", checked once the length is read.
	UnauthArgs int
	UnauthBulk int64
}

// Unlimited returns limits no real command reaches; they keep the
// scanner's arithmetic far from overflow.
func Unlimited() Limits {
	return Limits{MaxArgs: math.MaxInt32, MaxBulk: 1 << 50, MaxQuery: math.MaxInt64}
}

// maxInline is the longest inline (telnet-style) command line, as in Redis.
const maxInline = 64 << 10

// ProtocolError is a framing error. A server answers it with
// "-ERR <text>" and closes the connection; the texts are Redis's.
type ProtocolError string

func (e ProtocolError) Error() string { return string(e) }

// Reader parses the commands a client sends, in place. Every complete
// command of a read becomes one Command whose Raw and Args slice the
// Reader's buffer, so a steady pipeline allocates nothing. The commands
// and their arguments are valid only until the next Read: anything kept
// longer must be copied.
//
// Parsing and limits are one pass. A complete, well-formed command is
// sliced in one walk over its length fields. A command that is not yet
// complete is followed byte by byte by a scanner that keeps only counters,
// across reads: it refuses a limit the moment the bytes break it, and the
// command is sliced once, when its last byte arrives, however many reads
// it took.
type Reader struct {
	rd         io.Reader
	buf        []byte
	start, end int     // unparsed bytes: buf[start:end]
	sc         scanner // the unfinished command at buf[start:], scanned up to start+sc.done
	cmds       []Command
	args       [][]byte
	err        error // a read error, returned once the bytes before it are parsed
	again      bool  // parsing stopped at a command judged only after those before it ran
}

// NewReader reads commands from rd.
func NewReader(rd io.Reader) *Reader { return &Reader{rd: rd} }

// Read returns the next batch: every complete command buffered, reading
// from rd until there is at least one. lim applies to the commands of this
// batch. A command that breaks lim after others in the same batch is judged
// on the next Read, under the limits then: an AUTH or CONFIG SET just run
// may have changed them, as in Redis, where each command is parsed after
// the previous one ran.
func (r *Reader) Read(lim Limits) ([]Command, error) {
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	r.again = false
	for {
		cmds, err := r.parse(lim)
		if len(cmds) > 0 {
			r.again = err != nil
			return cmds, nil
		}
		if err != nil {
			return nil, err
		}
		if r.err != nil {
			err, r.err = r.err, nil
			return nil, err
		}
		r.room()
		n, err := r.rd.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			if n == 0 {
				return nil, err
			}
			r.err = err
		}
	}
}

// Size is the read buffer's size, bytes.
func (r *Reader) Size() int { return len(r.buf) }

// Partial reports whether part of a command has arrived and the rest has
// not.
func (r *Reader) Partial() bool { return r.start < r.end && !r.again && r.err == nil }

// Buffered reports whether the next Read has something to return without
// reading: a command held back by Read, or a read error. An event loop
// that waits for the socket to be readable must call Read again first.
func (r *Reader) Buffered() bool { return r.again || r.err != nil }

// room makes space at the end of the buffer for the next read.
func (r *Reader) room() {
	switch {
	case r.start == r.end:
		r.start, r.end = 0, 0
		if len(r.buf) > 64<<10 { // let a one-off large command go
			r.buf = make([]byte, 4096)
		}
	case r.end == len(r.buf):
		if r.start > 0 { // move the unfinished command to the front
			r.end = copy(r.buf, r.buf[r.start:r.end])
			r.start = 0
		}
		if r.end == len(r.buf) {
			nb := make([]byte, 2*len(r.buf))
			copy(nb, r.buf[:r.end])
			r.buf = nb
		}
	}
}

// parse slices every complete command out of buf[start:end]. It stops at
// the first command that breaks the protocol or lim, returning the
// commands before it with the error.
func (r *Reader) parse(lim Limits) ([]Command, error) {
	clear(r.cmds) // drop the last batch's slices of the buffer
	r.cmds, r.args = r.cmds[:0], r.args[:0]
	for r.start < r.end {
		b := r.buf[r.start:r.end]
		if r.sc.done == 0 {
			if n := r.whole(b, lim); n > 0 {
				r.start += n
				continue
			}
		}
		end, bad := r.sc.scan(b[r.sc.done:], lim)
		if bad != "" {
			r.sc = scanner{} // a held-back command is scanned again from its start
			return r.cmds, ProtocolError("Protocol error: " + bad)
		}
		if end < 0 {
			r.sc.done = len(b)
			break
		}
		n := r.sc.done + end
		r.sc = scanner{}
		if err := r.slice(b[:n]); err != nil {
			return r.cmds, err
		}
		r.start += n
	}
	return r.cmds, nil
}

// whole is the fast path: if b starts with a complete, well-formed
// multibulk command within lim, it appends the command and returns its
// length; otherwise 0, and the scanner takes over to wait for the rest or
// name the error. A pipeline of small commands is parsed here at the cost
// of one pass over its length fields.
func (r *Reader) whole(b []byte, lim Limits) int {
	if len(b) < 4 || b[0] != '*' {
		return 0
	}
	count, i := fastLen(b, 1)
	if i < 0 || count < 1 || count > int64(lim.MaxArgs) || lim.UnauthArgs > 0 && count > int64(lim.UnauthArgs) {
		return 0
	}
	first := len(r.args)
	for ; count > 0; count-- {
		if i >= len(b) || b[i] != '$' {
			r.args = r.args[:first]
			return 0
		}
		size, j := fastLen(b, i+1)
		if j < 0 || size > lim.MaxBulk || lim.UnauthBulk > 0 && size > lim.UnauthBulk || int64(len(b)-j) < size+2 {
			r.args = r.args[:first]
			return 0
		}
		end := j + int(size)
		if b[end] != '\r' || b[end+1] != '\n' {
			r.args = r.args[:first]
			return 0
		}
		r.args = append(r.args, b[j:end:end])
		i = end + 2
	}
	if int64(i) > lim.MaxQuery {
		r.args = r.args[:first]
		return 0
	}
	r.cmds = append(r.cmds, Command{Raw: b[:i:i], Args: r.args[first:len(r.args):len(r.args)]})
	return i
}

// slice appends the command that b holds exactly, which the scanner has
// found complete and well framed.
func (r *Reader) slice(b []byte) error {
	if b[0] != '*' {
		return r.inline(b)
	}
	i := 1
	for b[i] != '\r' {
		i++
	}
	count, _ := parseLen(b[1:i])
	if count <= 0 {
		return nil // *0 or *-n: no command
	}
	i += 2
	first := len(r.args)
	for ; count > 0; count-- {
		j := i + 1
		for b[j] != '\r' {
			j++
		}
		size, _ := parseLen(b[i+1 : j])
		r.args = append(r.args, b[j+2:j+2+size:j+2+size])
		i = j + 2 + size + 2
	}
	r.cmds = append(r.cmds, Command{Raw: b[:len(b):len(b)], Args: r.args[first:len(r.args):len(r.args)]})
	return nil
}

// inline parses one telnet-style line, ending in '\n', with redcon's own
// parser (quotes and escapes included); such commands are rare and may
// allocate. A blank line makes no command.
func (r *Reader) inline(b []byte) error {
	cmd, err := redcon.Parse(b)
	switch {
	case err == nil:
		r.cmds = append(r.cmds, Command{Raw: cmd.Raw, Args: cmd.Args})
	case err.Error() == "incomplete command": // a line of spaces: no arguments
	default:
		return ProtocolError(err.Error())
	}
	return nil
}

// scanner follows RESP framing byte by byte across reads, keeping only
// counters: where in a command it is, how many arguments and bytes remain.
type scanner struct {
	done    int // bytes of the unfinished command scanned so far
	state   scanState
	num     int64 // number being read
	neg     bool
	digits  int
	args    int64 // arguments left in this command
	body    int64 // bytes left in this argument, CRLF included
	pending int64 // bytes of the unfinished command
}

type scanState uint8

const (
	scanStart   scanState = iota // between commands
	scanCount                    // after '*': the argument count
	scanCountLF                  // after the count's '\r'
	scanDollar                   // expecting '$'
	scanLen                      // after '$': the argument length
	scanLenLF                    // after the length's '\r'
	scanBody                     // argument bytes and their CRLF
	scanInline                   // a telnet-style line
)

// scan consumes b, the bytes after those scanned so far. It returns the
// offset just past the end of the command (-1 if b does not finish it) or,
// if b breaks the protocol or lim, the protocol error's text.
func (sc *scanner) scan(b []byte, lim Limits) (end int, bad string) {
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch sc.state {
		case scanStart:
			if ch == '*' {
				sc.state, sc.num, sc.neg, sc.digits = scanCount, 0, false, 0
			} else {
				sc.state = scanInline
				i-- // the byte belongs to the line
				continue
			}
		case scanInline:
			if ch == '\n' {
				return i + 1, ""
			}
			if sc.pending >= maxInline {
				return -1, "too big inline request"
			}
		case scanCount, scanLen:
			isCount := sc.state == scanCount
			switch {
			case ch == '\r' && sc.digits > 0:
				if isCount {
					if !sc.neg && lim.UnauthArgs > 0 && sc.num > int64(lim.UnauthArgs) {
						return -1, "unauthenticated multibulk length"
					}
					sc.state = scanCountLF
				} else {
					if !sc.neg && lim.UnauthBulk > 0 && sc.num > lim.UnauthBulk {
						return -1, "unauthenticated bulk length"
					}
					sc.state = scanLenLF
				}
			case ch == '-' && sc.digits == 0 && !sc.neg:
				sc.neg = true
			case ch >= '0' && ch <= '9':
				sc.digits++
				sc.num = sc.num*10 + int64(ch-'0')
				if isCount && (sc.num > int64(lim.MaxArgs)) {
					return -1, "invalid multibulk length"
				}
				if !isCount && sc.num > lim.MaxBulk {
					return -1, "invalid bulk length"
				}
			default:
				if isCount {
					return -1, "invalid multibulk length"
				}
				return -1, "invalid bulk length"
			}
		case scanCountLF:
			if ch != '\n' {
				return -1, "invalid multibulk length"
			}
			if sc.neg || sc.num == 0 {
				return i + 1, "" // *0 and *-n: an empty command, ignored as Redis does
			}
			sc.args = sc.num
			sc.state = scanDollar
		case scanDollar:
			if ch != '$' {
				return -1, fmt.Sprintf("expected '$', got '%s'", printable(ch))
			}
			sc.state, sc.num, sc.neg, sc.digits = scanLen, 0, false, 0
		case scanLenLF:
			if ch != '\n' || sc.neg {
				return -1, "invalid bulk length"
			}
			sc.body = sc.num + 2
			sc.state = scanBody
		case scanBody:
			// Skip the argument's bytes in one step; check the CRLF.
			if sc.body > 2 {
				skip := min(sc.body-2, int64(len(b)-i))
				sc.body -= skip
				sc.pending += skip
				if sc.pending > lim.MaxQuery {
					return -1, "client query buffer limit reached"
				}
				i += int(skip) - 1
				continue
			}
			if (sc.body == 2 && ch != '\r') || (sc.body == 1 && ch != '\n') {
				return -1, "invalid bulk length"
			}
			sc.body--
			if sc.body == 0 {
				sc.args--
				if sc.args == 0 {
					return i + 1, ""
				}
				sc.state = scanDollar
			}
		}
		sc.pending++
		if sc.pending > lim.MaxQuery {
			return -1, "client query buffer limit reached"
		}
	}
	return -1, ""
}

// fastLen reads the digits of a length starting at b[i] up to their CRLF,
// and returns the value and the index after the CRLF, or -1 when the
// digits are not a plain non-negative number of at most 18 digits or the
// line is incomplete.
func fastLen(b []byte, i int) (int64, int) {
	var n int64
	start := i
	for ; i < len(b) && i-start <= 18; i++ {
		ch := b[i]
		if ch == '\r' {
			if i == start || i+1 >= len(b) || b[i+1] != '\n' {
				return 0, -1
			}
			return n, i + 2
		}
		if ch < '0' || ch > '9' {
			return 0, -1
		}
		n = n*10 + int64(ch-'0')
	}
	return 0, -1
}

// parseLen reads a length the scanner has checked: digits, perhaps a
// minus sign before them.
func parseLen(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' || n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func printable(ch byte) string {
	if ch >= ' ' && ch <= '~' {
		return string(ch)
	}
	return fmt.Sprintf("\\x%02x", ch)
}
