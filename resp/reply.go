package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A Reply is one RESP2 reply as a client reads it: the answer of a server
// this one talks to (a cluster member it forwards to, a MIGRATE target).
type Reply struct {
	Kind  byte // '+', '-', ':', '$' or '*'
	Str   string
	Int   int64
	Elems []Reply
	Nil   bool // $-1 or *-1
}

// Err is the reply as an error when it is one, nil otherwise.
func (r Reply) Err() error {
	if r.Kind == '-' {
		return ReplyError(r.Str)
	}
	return nil
}

// ReplyError is an error reply's text, as the server sent it.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// maxReplyElems bounds what a peer's array header may announce, so that
// a broken or hostile peer cannot make this server allocate without end.
const maxReplyElems = 1 << 20

// ReadReply reads one reply from br.
func ReadReply(br *bufio.Reader) (Reply, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return Reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, errors.New("resp: bad reply line")
	}
	r := Reply{Kind: line[0], Str: string(line[1 : len(line)-2])}
	switch r.Kind {
	case '+', '-':
		return r, nil
	case ':':
		r.Int, err = strconv.ParseInt(r.Str, 10, 64)
		return r, err
	case '$':
		n, err := strconv.Atoi(r.Str)
		if err != nil || n < -1 || n > 512<<20 {
			return r, fmt.Errorf("resp: bad bulk length %q", r.Str)
		}
		if n < 0 {
			r.Nil, r.Str = true, ""
			return r, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return r, err
		}
		r.Str = string(b[:n])
		return r, nil
	case '*':
		n, err := strconv.Atoi(r.Str)
		if err != nil || n < -1 || n > maxReplyElems {
			return r, fmt.Errorf("resp: bad array length %q", r.Str)
		}
		if n < 0 {
			r.Nil = true
			return r, nil
		}
		r.Elems = make([]Reply, n)
		for i := range r.Elems {
			if r.Elems[i], err = ReadReply(br); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	return r, fmt.Errorf("resp: unknown reply type %q", r.Kind)
}
