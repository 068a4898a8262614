package tests

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMonitorMatchesRedis: what a MONITOR connection sees of another
// client's commands is what redis-server shows, line for line once the
// time and address are set aside: administration commands hidden, AUTH's
// arguments redacted, a transaction's commands as EXEC runs them, and the
// monitor itself refused the keyspace.
func TestMonitorMatchesRedis(t *testing.T) {
	t.Parallel()
	sock := startRedis(t).Options().Addr
	ts := startServer(t)
	stamp := regexp.MustCompile(`^\+\d+\.\d{6} \[0 [^\]]+\] `)
	session := []string{
		cmd("SET", "k", "a b\n\x01\"\\"),
		cmd("AUTH", "someone", "secret"),
		cmd("CONFIG", "GET", "maxclients"),
		cmd("GET", "k"),
		cmd("PING"),
		cmd("SAVE"),
		cmd("MULTI"), cmd("INCR", "x"), cmd("EXEC"),
		cmd("ECHO", "last"),
	}
	run := func(network, addr string) []string {
		mon, err := net.Dial(network, addr)
		require.NoError(t, err)
		defer mon.Close()
		mon.SetDeadline(time.Now().Add(10 * time.Second))
		mr := bufio.NewReader(mon)
		io.WriteString(mon, cmd("MONITOR"))
		l, err := mr.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+OK\r\n", l)
		c, err := net.Dial(network, addr)
		require.NoError(t, err)
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		cr := bufio.NewReader(c)
		for _, s := range session {
			io.WriteString(c, s)
			_, err := respValue(cr)
			require.NoError(t, err)
		}
		var lines []string
		for {
			l, err := mr.ReadString('\n')
			require.NoError(t, err)
			l = stamp.ReplaceAllString(strings.TrimRight(l, "\r\n"), "")
			lines = append(lines, l)
			if l == `"ECHO" "last"` {
				break
			}
		}
		io.WriteString(mon, cmd("GET", "k"))
		l, _ = mr.ReadString('\n')
		return append(lines, strings.TrimRight(l, "\r\n"))
	}
	require.Equal(t, run("unix", sock), run("tcp", ts.addr))
}
