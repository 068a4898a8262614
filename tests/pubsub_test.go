package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/stretchr/testify/require"
)

// respValue reads one whole RESP value and returns its bytes.
func respValue(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return line, err
	}
	out := line
	body := strings.TrimRight(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return out, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return out, err
		}
		return out + string(b), nil
	case '*', '>', '~', '%':
		n, _ := strconv.Atoi(body)
		if line[0] == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			v, err := respValue(rd)
			out += v
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// TestPubSubMatchesRedis runs one pub/sub session, a subscriber and a
// publisher, in RESP2 and RESP3, against limitdb and redis-server, and
// wants the same bytes on both connections at every step.
func TestPubSubMatchesRedis(t *testing.T) {
	t.Parallel()
	sock := startRedis(t).Options().Addr
	type step struct {
		on      string // "sub" or "pub"
		send    []string
		replies map[string]int // values to read, per connection
	}
	session := []step{
		{"sub", []string{"SUBSCRIBE", "a", "b"}, map[string]int{"sub": 2}},
		{"sub", []string{"PSUBSCRIBE", "n*"}, map[string]int{"sub": 1}},
		{"sub", []string{"GET", "k"}, map[string]int{"sub": 1}}, // refused in RESP2 while subscribed
		{"pub", []string{"PUBLISH", "a", "hello"}, map[string]int{"pub": 1, "sub": 1}},
		{"pub", []string{"PUBLISH", "news", "x"}, map[string]int{"pub": 1, "sub": 1}},
		{"pub", []string{"PUBLISH", "c", "nobody"}, map[string]int{"pub": 1}},
		{"pub", []string{"PUBSUB", "CHANNELS", "b"}, map[string]int{"pub": 1}}, // (the order of several is unspecified, as in Redis)
		{"pub", []string{"PUBSUB", "CHANNELS", "a*"}, map[string]int{"pub": 1}},
		{"pub", []string{"PUBSUB", "NUMSUB", "a", "c"}, map[string]int{"pub": 1}},
		{"pub", []string{"PUBSUB", "NUMPAT"}, map[string]int{"pub": 1}},
		{"sub", []string{"PING"}, map[string]int{"sub": 1}},
		{"sub", []string{"PING", "hi"}, map[string]int{"sub": 1}},
		{"sub", []string{"UNSUBSCRIBE", "a"}, map[string]int{"sub": 1}},
		{"pub", []string{"PUBLISH", "a", "gone"}, map[string]int{"pub": 1}},
		{"sub", []string{"UNSUBSCRIBE", "b", "zz"}, map[string]int{"sub": 2}},
		{"sub", []string{"PUNSUBSCRIBE", "n*"}, map[string]int{"sub": 1}},
		{"sub", []string{"UNSUBSCRIBE"}, map[string]int{"sub": 1}},
		{"sub", []string{"PING"}, map[string]int{"sub": 1}},
	}
	run := func(addr, network string, proto int) string {
		var out strings.Builder
		conns := map[string]*bufio.Reader{}
		ncs := map[string]net.Conn{}
		for _, who := range []string{"sub", "pub"} {
			nc, err := net.Dial(network, addr)
			require.NoError(t, err)
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			ncs[who], conns[who] = nc, bufio.NewReader(nc)
			if proto == 3 {
				io.WriteString(nc, cmd("HELLO", "3"))
				respValue(conns[who]) // the server's description differs
			}
		}
		for i, st := range session {
			io.WriteString(ncs[st.on], cmd(st.send...))
			for _, who := range []string{"pub", "sub"} {
				for j := 0; j < st.replies[who]; j++ {
					v, err := respValue(conns[who])
					require.NoError(t, err, "step %d %v", i, st.send)
					fmt.Fprintf(&out, "step %d %s: %q\n", i, who, v)
				}
			}
		}
		return out.String()
	}
	// Messages reach a connection on the event loop, and one served by a
	// goroutine of its own (woken from its read).
	for _, loop := range []bool{true, false} {
		ts, _ := startWith(t, func(c *config.Config) { c.EventLoop = loop }, nil)
		for _, proto := range []int{2, 3} {
			want := run(sock, "unix", proto)
			got := run(ts.addr, "tcp", proto)
			require.Equal(t, want, got, "RESP%d, event-loop %v", proto, loop)
		}
	}
}
