package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/internal/redisarg"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/rls"
)

// rlsCharger charges the rate limit service's counters through the
// command layer: RLS.CHARGE on a LocalClient for the keys this node
// serves, so that the gates, statistics and MONITOR see every charge, and
// in a cluster RLS.CHARGE on the client port of the primary that owns
// each other key's slot. The keys of one slot go in one command (the
// cluster gate refuses a command whose keys span slots); the commands for
// one owner go down one connection together, so that a request costs one
// round trip per owner, as envoyproxy/ratelimit's pipelines through a
// cluster client do.
type rlsCharger struct {
	srv   *command.Server
	route func(key []byte) (slot int, addr string) // the cluster family's RLSRoute
	mu    sync.Mutex
	free  []*localCharge // idle LocalClients, at most maxIdleLocal
	peers peerConns
}

// newRLSCharger charges through srv, sending each key where route says
// (clustering.Family.RLSRoute).
func newRLSCharger(srv *command.Server, route func(key []byte) (slot int, addr string)) *rlsCharger {
	return &rlsCharger{srv: srv, route: route, peers: peerConns{srv: srv, idle: map[string][]*peerConn{}}}
}

// maxIdleLocal bounds the LocalClients kept between requests: about the
// requests one node runs at once.
var maxIdleLocal = 4 * runtime.GOMAXPROCS(0)

// localCharge is a LocalClient and the buffers one charge reuses.
type localCharge struct {
	lc    *command.LocalClient
	args  rls.ChargeArgsBuilder
	reply replyLines
}

// group is the charges of one slot: where they go and which they are.
type group struct {
	slot int
	addr string // "" here
	idx  []int  // the request's charges, in order
}

// Charge implements rls.Charger.
func (r *rlsCharger) Charge(req *rls.ChargeRequest, out []rls.Status) error {
	slot, addr := r.route(req.Charges[0].Key)
	if slot < 0 { // not a cluster: every key here, in one command
		return r.local(req, req.Charges, statuses{out: out})
	}
	return r.chargeCluster(req, out, slot, addr)
}

// chargeCluster charges across a cluster's owners, the first charge's
// slot and owner known. It is a function of its own so that the local
// path's frame stays small (see rls.Service.DecideFor).
func (r *rlsCharger) chargeCluster(req *rls.ChargeRequest, out []rls.Status, slot int, addr string) error {
	groups := []group{{slot: slot, addr: addr, idx: []int{0}}}
	for i := 1; i < len(req.Charges); i++ {
		slot, addr := r.route(req.Charges[i].Key)
		g := 0
		for g < len(groups) && groups[g].slot != slot {
			g++
		}
		if g == len(groups) {
			groups = append(groups, group{slot: slot, addr: addr})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	// Every owner's commands leave before any reply is awaited, and the
	// local ones run meanwhile.
	var calls []*peerCall
	for i := range groups {
		if a := groups[i].addr; a != "" && !hasCall(calls, a) {
			calls = append(calls, r.peers.send(a, false, req, groups))
		}
	}
	errs := make([]error, len(groups))
	for i, g := range groups {
		if g.addr == "" {
			errs[i] = r.local(req, pick(req.Charges, g.idx), statuses{out, g.idx})
		}
	}
	for _, c := range calls {
		c.finish(req, groups, out, errs)
	}
	// A slot on the move answers MOVED or ASK: its charges follow once,
	// at the cost of one more round trip.
	var err error
	for i, g := range groups {
		e := errs[i]
		if addr, asking, ok := redirected(e); ok {
			g.addr = addr
			one := []group{g}
			r.peers.send(addr, asking, req, one).finish(req, one, out, errs[i:i+1])
			e = errs[i]
		}
		if e != nil && err == nil {
			err = e
		}
	}
	return err
}

// redirected reads a MOVED or ASK refusal: where the slot's keys are
// served, and whether ASKING must come first.
func redirected(err error) (addr string, asking, ok bool) {
	e, isReply := err.(errReply) // the refusal itself, not a failure that wraps one
	if !isReply {
		return "", false, false
	}
	f := strings.Fields(string(e))
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", false, false
	}
	return f[2], f[0] == "ASK", true
}

func hasCall(calls []*peerCall, addr string) bool {
	for _, c := range calls {
		if c.addr == addr {
			return true
		}
	}
	return false
}

func pick(charges []rls.Charge, idx []int) []rls.Charge {
	out := make([]rls.Charge, len(idx))
	for k, i := range idx {
		out[k] = charges[i]
	}
	return out
}

// statuses takes a command's statuses, in its charges' order: the k-th
// goes to out[idx[k]], or to out[k] when idx is nil.
type statuses struct {
	out []rls.Status
	idx []int
}

func (s statuses) set(k int, st rls.Status) {
	if s.idx != nil {
		k = s.idx[k]
	}
	s.out[k] = st
}

func (r *rlsCharger) local(req *rls.ChargeRequest, charges []rls.Charge, sink statuses) error {
	l := r.get()
	l.lc.SetUser(req.User)
	reply := l.lc.Do(l.args.Build(req.Mode, req.NearRatio, charges)...)
	if len(reply) == 0 {
		// CLIENT KILL closed it: it runs nothing more, and a new one
		// takes its place.
		l.lc.Close()
		return errors.New("rls: the rate limit service's client was killed; try again")
	}
	defer r.put(l)
	l.reply = replyLines(reply)
	return readStatuses(&l.reply, len(charges), sink)
}

func (r *rlsCharger) get() *localCharge {
	r.mu.Lock()
	if n := len(r.free); n > 0 {
		l := r.free[n-1]
		r.free = r.free[:n-1]
		r.mu.Unlock()
		return l
	}
	r.mu.Unlock()
	return &localCharge{lc: r.srv.NewRLSClient()}
}

func (r *rlsCharger) put(l *localCharge) {
	r.mu.Lock()
	if len(r.free) < maxIdleLocal {
		r.free = append(r.free, l)
		l = nil
	}
	r.mu.Unlock()
	if l != nil {
		l.lc.Close()
	}
}

// close forgets the idle LocalClients and closes the idle connections.
func (r *rlsCharger) close() {
	r.mu.Lock()
	for _, l := range r.free {
		l.lc.Close()
	}
	r.free = nil
	r.mu.Unlock()
	r.peers.close()
}

// errReply is an error another node, or this one's command layer,
// answered, in its words ("READONLY ...", "MOVED 3999 host:port").
type errReply string

func (e errReply) Error() string { return string(e) }

// lineReader gives a RESP reply's lines one by one, without their CRLF.
type lineReader interface {
	readLine() ([]byte, error)
}

// replyLines are the lines of a reply held whole (a LocalClient's).
type replyLines []byte

func (r *replyLines) readLine() ([]byte, error) {
	b := *r
	// A plain loop: the lines are a few bytes long, shorter than
	// bytes.IndexByte's set-up is worth.
	for i, c := range b {
		if c == '\n' {
			*r = b[i+1:]
			if i > 0 && b[i-1] == '\r' {
				return b[:i-1], nil
			}
			return b[:i], nil
		}
	}
	if len(b) == 0 {
		return nil, io.EOF
	}
	return nil, io.ErrUnexpectedEOF
}

// connLines are the lines of a reply read from a connection.
type connLines struct{ br *bufio.Reader }

func (c connLines) readLine() ([]byte, error) { return readLine(c.br) }

// readStatuses reads an RLS.CHARGE reply of n charges into sink.
func readStatuses(lr lineReader, n int, sink statuses) error {
	line, err := lr.readLine()
	if err != nil {
		return err
	}
	switch {
	case len(line) > 0 && line[0] == '-':
		return errReply(line[1:])
	case len(line) == 0 || line[0] != '*':
		return fmt.Errorf("rls: unexpected reply to RLS.CHARGE: %q", line)
	}
	if m, ok := redisarg.ParseInt(line[1:]); !ok || m != int64(n*rls.StatusInts) {
		return fmt.Errorf("rls: RLS.CHARGE answered %s integers for %d charges", line[1:], n)
	}
	var v [rls.StatusInts]int64
	for k := range n {
		for j := range v {
			line, err := lr.readLine()
			if err != nil {
				return err
			}
			if len(line) == 0 || line[0] != ':' {
				return fmt.Errorf("rls: unexpected reply to RLS.CHARGE: %q", line)
			}
			var ok bool
			if v[j], ok = redisarg.ParseInt(line[1:]); !ok {
				return fmt.Errorf("rls: unexpected reply to RLS.CHARGE: %q", line)
			}
		}
		sink.set(k, rls.StatusOf(v[:]))
	}
	return nil
}

// readLine reads one RESP line without its CRLF.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
}

// ---- the owners' client ports ----------------------------------------------

// peerConns keeps idle connections to other nodes' client ports,
// authenticated as replicas authenticate to their primary (masteruser,
// masterauth). Each round trip has 2 × cluster-node-timeout to finish,
// the bound peers' other calls use.
type peerConns struct {
	srv    *command.Server
	mu     sync.Mutex
	idle   map[string][]*peerConn
	closed bool
}

type peerConn struct {
	conn net.Conn
	br   *bufio.Reader
}

// maxIdlePeer bounds the idle connections kept to one node.
const maxIdlePeer = 16

// peerCall is the commands of one request sent to one owner, and what
// came of sending them.
type peerCall struct {
	p      *peerConns
	addr   string
	out    []byte // the commands, sent again on a new connection when an idle one had gone stale
	asking bool   // out starts with ASKING
	pc     *peerConn
	reused bool
	err    error
}

func (p *peerConns) timeout() time.Duration {
	return time.Duration(p.srv.Config().ClusterNodeTimeout) * time.Millisecond
}

// send writes the RLS.CHARGE of every group of addr's on one connection,
// after ASKING when asking: an idle one, or, when it has gone stale (the
// peer closed it), a new one.
func (p *peerConns) send(addr string, asking bool, req *rls.ChargeRequest, groups []group) *peerCall {
	var out []byte
	if asking {
		out = persistence.AppendArgs(out, [][]byte{[]byte("ASKING")})
	}
	for _, g := range groups {
		if g.addr == addr {
			args := rls.ChargeArgs(nil, req.Mode, req.NearRatio, pick(req.Charges, g.idx))
			out = persistence.AppendArgs(out, args)
		}
	}
	c := &peerCall{p: p, addr: addr, out: out, asking: asking}
	c.write(true)
	return c
}

// write sends c's commands on an idle connection when idleOK, else on a
// new one; on an idle one that has gone stale, on a new one.
func (c *peerCall) write(idleOK bool) {
	for {
		pc, reused, err := c.p.get(c.addr, idleOK)
		if err != nil {
			c.err = err
			return
		}
		pc.conn.SetDeadline(time.Now().Add(2 * c.p.timeout()))
		if _, err = pc.conn.Write(c.out); err == nil {
			c.pc, c.reused, c.err = pc, reused, nil
			return
		}
		pc.conn.Close()
		c.err = err
		if !reused {
			return
		}
		idleOK = false
	}
}

// finish reads the replies of c's commands into out, and each group's
// refusal into errs (its index in groups); every group of c's fails alike
// when the owner cannot be reached.
func (c *peerCall) finish(req *rls.ChargeRequest, groups []group, out []rls.Status, errs []error) {
	fail := func(err error) {
		for i, g := range groups {
			if g.addr == c.addr {
				errs[i] = unreachable(c.addr, err)
			}
		}
	}
	if c.err != nil {
		fail(c.err)
		return
	}
	if c.reused {
		// An idle connection the peer has closed answers nothing at all:
		// it ran none of the commands, which go again on a new one.
		var ne net.Error
		if _, err := c.pc.br.Peek(1); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			c.pc.conn.Close()
			if c.write(false); c.err != nil {
				fail(c.err)
				return
			}
		}
	}
	if c.asking {
		line, err := readLine(c.pc.br)
		if err != nil {
			c.pc.conn.Close()
			fail(err)
			return
		}
		if len(line) == 0 || line[0] != '+' {
			c.pc.conn.Close()
			fail(fmt.Errorf("ASKING answered %q", line))
			return
		}
	}
	for i, g := range groups {
		if g.addr != c.addr {
			continue
		}
		e := readStatuses(connLines{c.pc.br}, len(g.idx), statuses{out, g.idx})
		var reply errReply
		if e != nil && !errors.As(e, &reply) {
			c.pc.conn.Close()
			fail(e)
			return
		}
		errs[i] = e
	}
	c.p.put(c.addr, c.pc)
}

func unreachable(addr string, err error) error {
	return fmt.Errorf("rls: the primary at %s that owns a counter's slot cannot be reached: %w", addr, err)
}

func (p *peerConns) get(addr string, idleOK bool) (pc *peerConn, reused bool, err error) {
	p.mu.Lock()
	if l := p.idle[addr]; idleOK && len(l) > 0 {
		pc = l[len(l)-1]
		p.idle[addr] = l[:len(l)-1]
		p.mu.Unlock()
		return pc, true, nil
	}
	p.mu.Unlock()
	pc, err = p.dial(addr)
	return pc, false, err
}

func (p *peerConns) dial(addr string) (*peerConn, error) {
	timeout := p.timeout()
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	pc := &peerConn{conn: conn, br: bufio.NewReader(conn)}
	cfg := p.srv.Config()
	if cfg.MasterAuth == "" {
		return pc, nil
	}
	auth := []string{"AUTH", cfg.MasterAuth}
	if cfg.MasterUser != "" {
		auth = []string{"AUTH", cfg.MasterUser, cfg.MasterAuth}
	}
	conn.SetDeadline(time.Now().Add(2 * timeout))
	if _, err := conn.Write(persistence.AppendCommand(nil, auth...)); err != nil {
		conn.Close()
		return nil, err
	}
	line, err := readLine(pc.br)
	if err == nil && (len(line) == 0 || line[0] != '+') {
		err = errReply(bytes.TrimPrefix(line, []byte("-")))
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return pc, nil
}

func (p *peerConns) put(addr string, pc *peerConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle[addr]) < maxIdlePeer {
		p.idle[addr] = append(p.idle[addr], pc)
		pc = nil
	}
	p.mu.Unlock()
	if pc != nil {
		pc.conn.Close()
	}
}

func (p *peerConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, l := range p.idle {
		for _, pc := range l {
			pc.conn.Close()
		}
	}
	p.idle = nil
}
