package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// respProxy is a loopback TCP proxy in front of one node that records the
// commands its clients send (the client → node direction: RESP arrays of
// bulk strings and inline commands); the replies pass through unread. A
// node announced at the proxy's port (--replica-announce-port) is reached
// by Sentinel only through it, so the proxies' logs are the literal list
// of what Sentinel sends.
//
// The node behind it may stop and start again at the same address: each
// client connection dials the node anew, and one that cannot is closed.
type respProxy struct {
	ln     net.Listener
	addr   string
	port   int
	target atomic.Value // string: the node's address

	mu    sync.Mutex
	conns []*proxyConn
}

// proxyConn is one client connection through the proxy and what it sent.
type proxyConn struct {
	mu   sync.Mutex
	name string     // the last CLIENT SETNAME
	cmds [][]string // every command, in order
}

// proxiedCommand is a command and the connection (its CLIENT SETNAME) it
// came on.
type proxiedCommand struct {
	conn int // index of the connection in the proxy
	name string
	args []string
}

// newRESPProxy listens on 127.0.0.1:0; it forwards to nothing until
// forwardTo names the node.
func newRESPProxy(t *testing.T) *respProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &respProxy{ln: ln, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
	p.target.Store("")
	var wg sync.WaitGroup
	var open sync.Map // net.Conn -> struct{}: closed on cleanup
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				open.Store(client, struct{}{})
				defer open.Delete(client)
				p.serve(client, &open)
			}()
		}
	}()
	return p
}

// forwardTo makes new connections go to addr.
func (p *respProxy) forwardTo(addr string) { p.target.Store(addr) }

func (p *respProxy) serve(client net.Conn, open *sync.Map) {
	defer client.Close()
	node, err := net.Dial("tcp", p.target.Load().(string))
	if err != nil {
		return // the node is down: the client sees its connection closed
	}
	open.Store(node, struct{}{})
	defer open.Delete(node)
	defer node.Close()
	pc := &proxyConn{}
	p.mu.Lock()
	p.conns = append(p.conns, pc)
	p.mu.Unlock()

	done := make(chan struct{})
	go func() {
		io.Copy(client, node)
		client.Close()
		close(done)
	}()
	// What the client sends reaches the node as it is read; the parser
	// reads the same bytes behind it. Bytes it cannot parse are still
	// forwarded.
	rd := bufio.NewReaderSize(io.TeeReader(client, node), 64<<10)
	for {
		args, err := readCommand(rd)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				io.Copy(io.Discard, rd)
			}
			break
		}
		if len(args) == 0 {
			continue
		}
		pc.mu.Lock()
		if len(args) >= 3 && strings.EqualFold(args[0], "client") && strings.EqualFold(args[1], "setname") {
			pc.name = args[2]
		}
		pc.cmds = append(pc.cmds, args)
		pc.mu.Unlock()
	}
	node.Close()
	<-done
}

// readCommand reads one command: a RESP array of bulk strings, or an
// inline command (words on a line); an empty line is an empty command.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := readLine(rd)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n > 1<<20 {
		return nil, errors.New("proxy: bad array header " + strconv.Quote(line))
	}
	args := make([]string, 0, max(n, 0))
	for i := 0; i < n; i++ {
		h, err := readLine(rd)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(h, "$") {
			return nil, errors.New("proxy: bad bulk header " + strconv.Quote(h))
		}
		size, err := strconv.Atoi(h[1:])
		if err != nil || size < 0 || size > 512<<20 {
			return nil, errors.New("proxy: bad bulk length " + strconv.Quote(h))
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args = append(args, string(b[:size]))
	}
	return args, nil
}

func readLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// commands is every command sent on connections whose CLIENT SETNAME
// starts with prefix ("" for all), in the order of the connections and,
// within each, as sent.
func (p *respProxy) commands(prefix string) []proxiedCommand {
	p.mu.Lock()
	conns := append([]*proxyConn(nil), p.conns...)
	p.mu.Unlock()
	var out []proxiedCommand
	for i, pc := range conns {
		pc.mu.Lock()
		if strings.HasPrefix(pc.name, prefix) {
			for _, args := range pc.cmds {
				out = append(out, proxiedCommand{conn: i, name: pc.name, args: args})
			}
		}
		pc.mu.Unlock()
	}
	return out
}

// formatCommands lists cmds a line each, with their connection.
func formatCommands(cmds []proxiedCommand) string {
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "\tconn %d %s: %q\n", c.conn, c.name, c.args)
	}
	return b.String()
}

// TestRESPProxyRecordsCommands: the proxy forwards both ways, records
// arrays, inline commands and pipelines, and the connection's name.
func TestRESPProxyRecordsCommands(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	p := newRESPProxy(t)
	p.forwardTo(ts.addr)
	nc, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer nc.Close()
	rd := bufio.NewReader(nc)
	_, err = io.WriteString(nc, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$5\r\nprobe\r\nPING hi\r\n\r\n*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n")
	require.NoError(t, err)
	for _, want := range []string{"+OK", "$2", "hi", "$4", "a"} {
		line, err := readLine(rd)
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	require.Eventually(t, func() bool { return len(p.commands("probe")) == 3 }, 30*time.Second, 10*time.Millisecond)
	var got [][]string
	for _, c := range p.commands("probe") {
		got = append(got, c.args)
	}
	require.Equal(t, [][]string{{"CLIENT", "SETNAME", "probe"}, {"PING", "hi"}, {"ECHO", "a\r\nb"}}, got)
	require.Empty(t, p.commands("sentinel-"))
}
