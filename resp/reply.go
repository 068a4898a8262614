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
	rep, _, err := readReply(r, 0, 0)
	return rep, err
}

// ReadBulk reads one reply as ReadReply does and, when it is a bulk
// string, returns its body too, refusing one of more than max bytes: the
// text of an INFO that a client needs to read.
func ReadBulk(r *bufio.Reader, max int) (Reply, []byte, error) {
	return readReply(r, 0, max)
}

// readReply reads one reply; a top-level bulk string's body is held when
// keep > 0 (and must be at most keep bytes), else skipped.
func readReply(r *bufio.Reader, depth, keep int) (Reply, []byte, error) {
	if depth > maxReplyDepth {
		return Reply{}, nil, errors.New("resp: reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF && line != "" {
			err = io.ErrUnexpectedEOF
		}
		return Reply{}, nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, nil, fmt.Errorf("resp: malformed reply line %q", line)
	}
	rep := Reply{Type: line[0], Line: line[1 : len(line)-2]}
	switch rep.Type {
	case '+', '-', ':', '_', ',', '#', '(':
		return rep, nil, nil
	case '$', '!', '=':
		n, err := strconv.ParseInt(rep.Line, 10, 64)
		if err != nil || n < -1 || n > maxReplyBulk {
			return Reply{}, nil, fmt.Errorf("resp: bad bulk length %q", rep.Line)
		}
		if n < 0 {
			return rep, nil, nil
		}
		held := rep.Type == '!' || (rep.Type == '$' && keep > 0 && depth == 0)
		switch {
		case rep.Type == '!' && n > maxErrorText:
			return Reply{}, nil, fmt.Errorf("resp: bulk error of %d bytes", n)
		case held && rep.Type == '$' && n > int64(keep):
			return Reply{}, nil, fmt.Errorf("resp: bulk string of %d bytes, more than %d", n, keep)
		case !held: // skipped, not held: the head is all a caller gets
			if _, err := r.Discard(int(n)); err != nil {
				return Reply{}, nil, noEOF(err)
			}
			n = 0
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return Reply{}, nil, noEOF(err)
		}
		if body[n] != '\r' || body[n+1] != '\n' {
			return Reply{}, nil, errors.New("resp: bulk string not ended by CRLF")
		}
		if rep.Type == '!' {
			rep.Line = string(body[:n])
			return rep, nil, nil
		}
		if held {
			return rep, body[:n], nil
		}
		return rep, nil, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.ParseInt(rep.Line, 10, 64)
		if err != nil || n < -1 || n > maxReplyBulk {
			return Reply{}, nil, fmt.Errorf("resp: bad aggregate length %q", rep.Line)
		}
		if rep.Type == '%' || rep.Type == '|' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			if _, _, err := readReply(r, depth+1, 0); err != nil {
				return Reply{}, nil, noEOF(err)
			}
		}
		if rep.Type == '|' { // attributes precede the reply they describe
			return readReply(r, depth+1, 0)
		}
		return rep, nil, nil
	}
	return Reply{}, nil, fmt.Errorf("resp: unknown reply type %q", rep.Type)
}

// noEOF turns an end of input inside a reply into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
