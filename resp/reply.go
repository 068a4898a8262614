package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Reply is the head of one reply, as a client that needs only each
// reply's outcome (MIGRATE) reads it: the type byte and the rest of the
// first line: an error's or simple string's text, an integer, a bulk
// string's or an aggregate's length.
type Reply struct {
	Type byte
	Line string
}

// IsError reports whether the reply is an error ('-', or RESP3's '!').
func (r Reply) IsError() bool { return r.Type == '-' || r.Type == '!' }

// maxReplyDepth bounds the nesting ReadReply follows, so a hostile peer
// cannot make it recurse without end.
const maxReplyDepth = 32

// maxReplyBulk is the longest bulk string ReadReply skips: Redis's
// proto-max-bulk-len default.
const maxReplyBulk = 512 << 20

// maxErrorText is the longest bulk error ReadReply keeps the text of.
const maxErrorText = 64 << 10

// ReadReply reads one whole reply from r, RESP2 or RESP3, and returns its
// head. A bulk error's text ('!') is returned as its Line. An error in the
// framing is returned as an error; io.EOF only when r ends before the
// reply's first byte.
func ReadReply(r *bufio.Reader) (Reply, error) {
	return readReply(r, 0)
}

func readReply(r *bufio.Reader, depth int) (Reply, error) {
	if depth > maxReplyDepth {
		return Reply{}, errors.New("resp: reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF && line != "" {
			err = io.ErrUnexpectedEOF
		}
		return Reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, fmt.Errorf("resp: malformed reply line %q", line)
	}
	rep := Reply{Type: line[0], Line: line[1 : len(line)-2]}
	switch rep.Type {
	case '+', '-', ':', '_', ',', '#', '(':
		return rep, nil
	case '$', '!', '=':
		n, err := strconv.ParseInt(rep.Line, 10, 64)
		if err != nil || n < -1 || n > maxReplyBulk {
			return Reply{}, fmt.Errorf("resp: bad bulk length %q", rep.Line)
		}
		if n < 0 {
			return rep, nil
		}
		if rep.Type != '!' { // skipped, not held: the head is all a caller gets
			if _, err := r.Discard(int(n)); err != nil {
				return Reply{}, noEOF(err)
			}
			n = 0
		} else if n > maxErrorText {
			return Reply{}, fmt.Errorf("resp: bulk error of %d bytes", n)
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return Reply{}, noEOF(err)
		}
		if body[n] != '\r' || body[n+1] != '\n' {
			return Reply{}, errors.New("resp: bulk string not ended by CRLF")
		}
		if rep.Type == '!' {
			rep.Line = string(body[:n])
		}
		return rep, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.ParseInt(rep.Line, 10, 64)
		if err != nil || n < -1 || n > maxReplyBulk {
			return Reply{}, fmt.Errorf("resp: bad aggregate length %q", rep.Line)
		}
		if rep.Type == '%' || rep.Type == '|' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			if _, err := readReply(r, depth+1); err != nil {
				return Reply{}, noEOF(err)
			}
		}
		if rep.Type == '|' { // attributes precede the reply they describe
			return readReply(r, depth+1)
		}
		return rep, nil
	}
	return Reply{}, fmt.Errorf("resp: unknown reply type %q", rep.Type)
}

// noEOF turns an end of input inside a reply into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadBulk reads one reply as ReadReply does and, when it is a bulk
// string of at most max bytes, returns its body too (nil otherwise): the
// text of an INFO that a client needs to read.
func ReadBulk(r *bufio.Reader, max int) (Reply, []byte, error) {
	b, err := r.Peek(1)
	if err != nil {
		return Reply{}, nil, err
	}
	if b[0] != '$' {
		rep, err := ReadReply(r)
		return rep, nil, err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return Reply{}, nil, noEOF(err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, nil, fmt.Errorf("resp: malformed reply line %q", line)
	}
	rep := Reply{Type: '$', Line: line[1 : len(line)-2]}
	n, err := strconv.ParseInt(rep.Line, 10, 64)
	switch {
	case err != nil || n < -1:
		return Reply{}, nil, fmt.Errorf("resp: bad bulk length %q", rep.Line)
	case n < 0:
		return rep, nil, nil
	case n > int64(max):
		return Reply{}, nil, fmt.Errorf("resp: bulk string of %d bytes, more than %d", n, max)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return Reply{}, nil, noEOF(err)
	}
	if body[n] != '\r' || body[n+1] != '\n' {
		return Reply{}, nil, errors.New("resp: bulk string not ended by CRLF")
	}
	return rep, body[:n], nil
}
