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

// monitorStamp is what differs between two servers' MONITOR lines for
// the same command: the time and the client's address. A script's
// commands keep their "[0 lua]".
var monitorStamp = regexp.MustCompile(`^\+\d+\.\d{6} \[0 (lua|[^\]]+)\] `)

// monitorStream sends session, one command after another, on a client of
// the server at addr while another client monitors it, and returns the
// monitor's lines up to `"ECHO" "last"` (the session's last command) with
// the time dropped and every client's address as "client", then the
// monitor's answer to a GET of its own.
func monitorStream(t *testing.T, network, addr string, session []string) []string {
	t.Helper()
	mon, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer mon.Close()
	mon.SetDeadline(time.Now().Add(20 * time.Second))
	mr := bufio.NewReader(mon)
	io.WriteString(mon, cmd("MONITOR"))
	l, err := mr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", l)
	c, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	cr := bufio.NewReader(c)
	for _, s := range append(session, cmd("ECHO", "last")) {
		io.WriteString(c, s)
		_, err := respValue(cr)
		require.NoError(t, err)
	}
	var lines []string
	for {
		l, err := mr.ReadString('\n')
		require.NoError(t, err)
		l = strings.TrimRight(l, "\r\n")
		if m := monitorStamp.FindStringSubmatch(l); m != nil {
			who := "client"
			if m[1] == "lua" {
				who = "lua"
			}
			l = "[" + who + "] " + l[len(m[0]):]
		}
		lines = append(lines, l)
		if l == `[client] "ECHO" "last"` {
			break
		}
	}
	io.WriteString(mon, cmd("GET", "k"))
	l, _ = mr.ReadString('\n')
	return append(lines, strings.TrimRight(l, "\r\n"))
}

// TestMonitorMatchesRedis: what a MONITOR connection sees of another
// client's commands is what redis-server shows, line for line once the
// time and address are set aside: administration commands hidden, AUTH's
// arguments redacted, a transaction's commands as EXEC runs them, and the
// monitor itself refused the keyspace.
func TestMonitorMatchesRedis(t *testing.T) {
	t.Parallel()
	sock := startRedis(t).Options().Addr
	ts := startServer(t)
	session := []string{
		cmd("SET", "k", "a b\n\x01\"\\"),
		cmd("AUTH", "someone", "secret"),
		cmd("CONFIG", "GET", "maxclients"),
		cmd("GET", "k"),
		cmd("PING"),
		cmd("SAVE"),
		cmd("MULTI"), cmd("INCR", "x"), cmd("EXEC"),
	}
	require.Equal(t, monitorStream(t, "unix", sock, session), monitorStream(t, "tcp", ts.addr, session))
}
