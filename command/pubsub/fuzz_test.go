package pubsub_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/limitdb/limitdb/resp"
)

// FuzzPubSubArgs sends arbitrary arguments to each of the family's
// commands on a fresh connection, and checks that each answers as many
// well-formed replies as Redis would (one per channel or pattern for
// (P)SUBSCRIBE and (P)UNSUBSCRIBE, one otherwise) and never panics. The
// first byte picks the command, the rest is split on NUL into arguments.
func FuzzPubSubArgs(f *testing.F) {
	names := [][]string{{"subscribe"}, {"psubscribe"}, {"unsubscribe"}, {"punsubscribe"}, {"publish"},
		{"pubsub"}, {"pubsub", "channels"}, {"pubsub", "numsub"}, {"pubsub", "numpat"}, {"pubsub", "help"}}
	for i := range names {
		f.Add([]byte{byte(i)})
		f.Add(append([]byte{byte(i), 0}, "a\x00b*\x00[\x00\\"...))
	}
	s := newServer(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		args := append([]string(nil), names[int(in[0])%len(names)]...)
		if len(in) > 1 {
			for _, a := range bytes.Split(in[1:], []byte{0}) {
				args = append(args, string(a))
			}
		}
		c := dial(t, s, "f:1")
		defer c.Hangup()
		out := c.Do(args...)
		want := 1
		switch args[0] {
		case "subscribe", "psubscribe", "unsubscribe", "punsubscribe":
			want = max(1, len(args)-1)
		}
		r := bufio.NewReader(bytes.NewBufferString(out))
		n := 0
		for {
			if _, err := resp.ReadReply(r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%q: malformed reply %q: %v", args, out, err)
			}
			n++
		}
		if n != want {
			t.Fatalf("%q: %d replies, want %d: %q", args, n, want, out)
		}
	})
}
