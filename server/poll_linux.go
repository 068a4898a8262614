//go:build linux

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// An event loop of our own, as Redis has, for plain TCP connections on
// Linux.
//
// With a goroutine per connection, Go's runtime does per request what an
// event loop does not: after answering, the goroutine reads again, gets
// EAGAIN, parks, and is woken through the runtime's poller and scheduler
// when the next request comes. At pipeline 1 that is a third of the
// server's reads and a goroutine switch per request (strace and perf,
// docs/performance-history.md). A poller instead waits on one epoll set
// for every connection it owns, reads each ready socket once, runs the
// commands it holds, and only then writes every reply of the round, so the
// replies leave together as Redis's do (bench/headline.sh, with
// --event-loop yes and no).
//
// There is one poller per GOMAXPROCS, each on its own goroutine; a new
// connection goes to the next one in turn. A connection's socket is taken
// from Go's poller (duplicated, the original closed) and wrapped in an
// fdConn, a net.Conn whose reads return errWouldBlock instead of waiting.
// Everything above it is the same either way: the reader, the handlers.
// TLS connections, and every connection on other systems, keep a goroutine
// each (server.go).

// errWouldBlock is an fdConn's read with nothing to read: the connection
// waits for its poller.
var errWouldBlock = errors.New("server: would block")

// errTimeout is an fdConn's read after its read deadline passed.
var errTimeout = os.ErrDeadlineExceeded

// tick is how often a poller checks deadlines and lingering connections.
const tick = 100 * time.Millisecond

// Under load a poller's loop never waits, so the goroutines that share its
// core (replication's senders, the append-only file's writer, timers, the
// garbage collector's mark worker) would run only when the runtime
// preempts it, every 10 ms: replicas would get the stream in 10 ms gulps,
// and the collector would take its quarter of the core in stalls of
// milliseconds, which every command in flight waits out (the p99 of
// bench/scripts.sh). The loop yields its core once every yieldEvery,
// checked after each connection it serves (a round of fifty pipelining
// clients is several milliseconds), which bounds that wait at no
// measurable cost when nothing else is waiting (a yield costs well under a
// microsecond; bench/README.md, "Replication").
const yieldEvery = time.Millisecond

type poller struct {
	s    *Server
	epfd int
	ef   *os.File        // epfd, watched by Go's poller while idle
	rc   syscall.RawConn // ef's
	wake [2]int          // a pipe: a byte in wake[1] means inbox has connections

	mu     sync.Mutex
	inbox  []*Conn
	mailed []*Conn       // connections Push gave mail to
	roomy  []*Conn       // shared sockets whose out another goroutine filled: watch them for room
	killed []*fdConn     // closed by other goroutines (fdConn.Close)
	back   []backConn    // connections whose long command ended on a goroutine that lost the loop
	stop   bool          // asked to stop
	gone   bool          // stopped: its descriptors are closed
	woken  bool          // the poller will look at the lists above without another byte in the pipe: a byte is there, or it is in a round (collect)
	quit   chan struct{} // closed once gone: ends watch

	// long is odd while the loop's goroutine runs a long command
	// (Conn.BeginLong) of longConn: watch may then take the loop over.
	long     atomic.Uint64
	longConn *Conn

	conns map[int32]*Conn // owned by the poller's goroutine, by socket
	dirty []*Conn         // connections with replies to write this round
	last  time.Time       // last deadline check
	yield time.Time       // last yield (yieldEvery)
}

// backConn is a connection handed back to its poller, with what its last
// read ended with.
type backConn struct {
	c   *Conn
	err error
}

// newPollers starts n pollers for l.
func newPollers(l *Server, n int) ([]*poller, error) {
	var ps []*poller
	for i := 0; i < n; i++ {
		p := &poller{s: l, conns: map[int32]*Conn{}, quit: make(chan struct{})}
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			stopPollers(ps)
			return nil, os.NewSyscallError("epoll_create1", err)
		}
		p.epfd = fd
		if err := syscall.SetNonblock(fd, true); err != nil {
			syscall.Close(fd)
			stopPollers(ps)
			return nil, os.NewSyscallError("fcntl", err)
		}
		p.ef = os.NewFile(uintptr(fd), "epoll")
		if p.rc, err = p.ef.SyscallConn(); err != nil {
			p.ef.Close()
			stopPollers(ps)
			return nil, err
		}
		if err := syscall.Pipe2(p.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
			p.ef.Close()
			stopPollers(ps)
			return nil, os.NewSyscallError("pipe2", err)
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.wake[0])}
		if err := syscall.EpollCtl(fd, syscall.EPOLL_CTL_ADD, p.wake[0], &ev); err != nil {
			p.ef.Close()
			syscall.Close(p.wake[0])
			syscall.Close(p.wake[1])
			stopPollers(ps)
			return nil, os.NewSyscallError("epoll_ctl", err)
		}
		ps = append(ps, p)
		go p.run()
		go p.watch()
	}
	return ps, nil
}

// stopPollers ends every poller; each closes the connections it still has.
func stopPollers(ps []*poller) {
	for _, p := range ps {
		p.post(func() { p.stop = true })
	}
}

// post changes the poller's shared state with fn, under its lock, and
// wakes it to look. Once the poller has gone it does nothing and reports
// false: its pipe is closed, and the descriptor may already be another
// file's.
func (p *poller) post(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return false
	}
	fn()
	if !p.woken { // one byte wakes it for every post before collect; none during a round
		p.woken = true
		// Raw, like the hot path's calls (see rawRead): the replication
		// senders post thousands of times a second, and a system call the
		// runtime knows about lets sysmon hand the only P to another thread
		// and back when the core is shared (bench/README.md, "Replication").
		rawWrite(p.wake[1], []byte{1})
	}
	return true
}

// adopt takes over nc's socket for p when it is a TCP connection (possibly
// behind the guard): it returns the fdConn now under nc, or nil to leave nc
// to a goroutine of its own.
func adopt(nc net.Conn, p *poller) *fdConn {
	slot := &nc
	if w, ok := nc.(interface{ inner() *net.Conn }); ok {
		slot = w.inner()
	}
	tc, ok := (*slot).(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	raw.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e == 0 {
			fd = int(r)
		}
	})
	if fd < 0 {
		return nil
	}
	// The duplicate shares the socket, non-blocking mode and options
	// included; closing the original takes it out of Go's poller.
	fc := &fdConn{p: p, fd: fd, laddr: tc.LocalAddr(), raddr: tc.RemoteAddr()}
	tc.Close()
	*slot = fc
	return fc
}

// add hands c, whose socket is fc, to the poller.
func (p *poller) add(c *Conn, fc *fdConn) {
	c.fc = fc
	p.post(func() { p.inbox = append(p.inbox, c) })
}

func (p *poller) run() {
	events := make([]syscall.EpollEvent, 128)
	for {
		// Look without waiting first: under load there is always
		// something. An idle poller parks in Go's own poller, which
		// watches the epoll descriptor, rather than blocking in
		// epoll_wait: see rawRead.
		n, err := rawEpollWait(p.epfd, events)
		if n == 0 && err == 0 {
			p.ef.SetReadDeadline(time.Now().Add(tick))
			p.rc.Read(func(uintptr) bool {
				n, err = rawEpollWait(p.epfd, events)
				return n != 0 || err != 0
			})
		}
		if err != 0 && err != syscall.EINTR {
			p.s.clk.Sleep(tick) // not expected: EBADF, EFAULT, EINVAL
		}
		if n > 0 {
			p.awake()
		}
		for _, ev := range events[:max(n, 0)] {
			if ev.Fd == int32(p.wake[0]) {
				if !p.welcome() {
					return
				}
				continue
			}
			c := p.conns[ev.Fd]
			if c == nil {
				continue
			}
			if !p.ready(c, ev.Events) {
				return
			}
			p.maybeYield()
		}
		if !p.collect() {
			return
		}
		if len(p.dirty) > 0 {
			p.s.h.EndRound()
		}
		p.flush()
		now := time.Now()
		if now.Sub(p.last) >= tick {
			p.last = now
			if !p.expire(now) {
				return
			}
		}
		p.maybeYield()
	}
}

// A command that runs long (a script, a walk of the whole keyspace) would
// hold up every other connection of its loop: the loop's goroutine is the
// one running it. The handler says when a command may run long
// (Conn.BeginLong, EndLong); a poller's watch then hands the loop to a
// new goroutine once the command has run for a tick of the server's
// clock, and the other connections are served from there. The connection
// whose command runs long leaves the poller (no longer watched, read or
// flushed by it) until that command returns; the goroutine running it
// then runs the rest of what the connection had sent, as it would have,
// and hands the connection back (collect), whose replies the poller
// flushes in order. A short command costs nothing of this: the handler's
// hooks are called only around commands that may run long, and only the
// hand-over starts a goroutine.

// watch hands the loop over when its goroutine has been in the same long
// command for a tick of the server's clock.
func (p *poller) watch() {
	t := p.s.clk.NewTicker(tick)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-p.quit:
			return
		case <-t.C():
		}
		if v := p.long.Load(); v&1 == 1 && v == seen && p.long.CompareAndSwap(v, v+1) {
			go p.takeOver()
		}
		seen = p.long.Load()
	}
}

// takeOver runs the loop on a new goroutine, without the connection whose
// command holds the old one: the old goroutine, inside that command, no
// longer touches the poller, and learns it lost the loop when the command
// returns (endLong).
func (p *poller) takeOver() {
	c := p.longConn
	p.longConn = nil
	c.away = true
	fd := c.fc.fd
	delete(p.conns, int32(fd))
	syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	if c.dirty {
		c.dirty = false
		p.dirty = slices.DeleteFunc(p.dirty, func(d *Conn) bool { return d == c })
	}
	// Posts made while the loop was held found it awake and wrote no byte
	// to the pipe: take them now.
	if p.collect() {
		p.run()
	}
}

// beginLong marks the loop's goroutine as running c's long command.
func (p *poller) beginLong(c *Conn) {
	p.longConn = c
	c.longSeq = p.long.Add(1)
}

// endLong ends c's long command; c is detached if the loop was taken over
// meanwhile.
func (p *poller) endLong(c *Conn) {
	if !p.long.CompareAndSwap(c.longSeq, c.longSeq+1) {
		c.detached = true
	}
}

// handBack returns c, whose long command ran on a goroutine that lost the
// loop, to the poller; once the poller has gone, it closes c itself.
func (p *poller) handBack(c *Conn, err error) {
	if p.post(func() { p.back = append(p.back, backConn{c, err}) }) {
		return
	}
	c.wr.Flush()
	c.fc.drain()
	c.fc.release()
	c.closed = true
	if err == errDraining || err == errWouldBlock {
		err = nil
	}
	p.s.gone(c, err)
}

// rejoin takes back a connection that had left for its long command: it is
// watched again, its replies and the mail that waited are flushed with the
// round's, and what ended its last read is acted on as serve would.
func (p *poller) rejoin(b backConn) {
	c, fc := b.c, b.c.fc
	c.detached, c.away, fc.waiting = false, false, false
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fc.fd)}
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fc.fd, &ev); err != nil {
		p.finish(c, os.NewSyscallError("epoll_ctl", err))
		return
	}
	p.conns[int32(fc.fd)] = c
	c.deliverMail()
	p.mark(c)
	err := b.err
	if err == errWouldBlock {
		err = nil
	}
	p.settle(c, err)
}

// maybeYield yields the poller's core when it has not for yieldEvery.
func (p *poller) maybeYield() {
	if now := time.Now(); now.Sub(p.yield) >= yieldEvery {
		p.yield = now
		runtime.Gosched()
	}
}

// awake marks the start of a round: what is posted during it is collected
// at its end, so a post needs no byte in the wake pipe (a PUBLISH to a
// subscriber of this poller, a replica's mail, cost a pipe write and read
// each before).
func (p *poller) awake() {
	p.mu.Lock()
	p.woken = true
	p.mu.Unlock()
}

// welcome empties the wake pipe and collects what was posted.
func (p *poller) welcome() bool {
	var buf [64]byte
	for {
		if n, _ := rawRead(p.wake[0], buf[:]); n < len(buf) { // an error or EAGAIN: n is -1
			break
		}
	}
	return p.collect()
}

// collect takes what was posted: it delivers mail, closes the connections
// killed, takes back those handed back, and registers the connections in
// the inbox. It returns false when the goroutine no longer runs the loop:
// the poller is stopping (every connection it had is closed), or a long
// command of a new connection lost it the loop.
func (p *poller) collect() bool {
	p.mu.Lock()
	in, killed, mailed, back, roomy, stop := p.inbox, p.killed, p.mailed, p.back, p.roomy, p.stop
	p.inbox, p.killed, p.mailed, p.back, p.roomy, p.woken = nil, nil, nil, nil, nil, false
	p.mu.Unlock()
	for _, c := range roomy {
		if fc := c.fc; fc.fd >= 0 && !c.away && !fc.waiting && fc.pending() > 0 && p.conns[int32(fc.fd)] == c {
			p.watchFor(c, syscall.EPOLLOUT)
		}
	}
	for _, c := range mailed {
		// A connection away for its long command has its mail delivered
		// when it is back (rejoin): its writer is another goroutine's.
		if c.fc != nil && c.fc.fd >= 0 && !c.away && c.deliverMail() {
			p.mark(c)
		}
	}
	for _, fc := range killed {
		// Usually the shut read side has woken the poller already; not
		// when the connection waits only for room to write.
		if c := p.conns[int32(fc.fd)]; c != nil && c.fc == fc {
			p.finish(c, nil)
		}
	}
	for _, b := range back {
		p.rejoin(b)
	}
	if stop {
		for _, c := range in {
			p.finish(c, nil)
		}
		for _, c := range p.conns {
			p.finish(c, nil)
		}
		p.mu.Lock()
		p.gone = true
		p.ef.Close()
		syscall.Close(p.wake[0])
		syscall.Close(p.wake[1])
		close(p.quit)
		p.mu.Unlock()
		return false
	}
	for i, c := range in {
		fd := c.fc.fd
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
		if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			p.finish(c, os.NewSyscallError("epoll_ctl", err))
			continue
		}
		p.conns[int32(fd)] = c
		// A first read, as a connection's goroutine makes at once: it
		// starts the guard's idle deadline and takes what already came.
		if !p.serve(c) {
			// The loop was taken over during a long command: the new
			// goroutine welcomes the rest.
			rest := in[i+1:]
			p.post(func() { p.inbox = append(rest, p.inbox...) })
			return false
		}
	}
	return true
}

// ready handles the events of one connection; false when the goroutine
// lost the loop (serve).
func (p *poller) ready(c *Conn, events uint32) bool {
	fc := c.fc
	if events&syscall.EPOLLOUT != 0 {
		if err := fc.drain(); err != nil {
			p.finish(c, err)
			return true
		}
		c.setOmem(c.unsent())
		if fc.pending() == 0 {
			// A Push from another goroutine that fills out again after
			// this look asks for room once more (wantRoom).
			p.watchFor(c, syscall.EPOLLIN|syscall.EPOLLRDHUP)
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		return true
	}
	if fc.lingering() {
		p.linger(c)
		return true
	}
	return p.serve(c)
}

// serve runs the commands that arrived on c; their replies wait for flush.
// It returns false when a long command of c lost the goroutine the loop
// (takeOver): c is then handed back, and the caller must return without
// touching the poller.
func (p *poller) serve(c *Conn) bool {
	err := p.s.step(c)
	for err == nil && !c.closed && c.rd.Buffered() {
		// The reader holds a command back (judged after the commands
		// before it ran) or an error: no readiness will announce them.
		err = p.s.step(c)
	}
	if c.detached {
		p.handBack(c, err)
		return false
	}
	if err == errWouldBlock {
		return true
	}
	p.mark(c)
	p.settle(c, err)
	return true
}

// settle acts on what ended c's last read: shutdown, an error, a close.
func (p *poller) settle(c *Conn, err error) {
	switch {
	case errors.Is(err, errDraining):
		p.s.h.EndRound()
		c.wr.Flush()
		c.fc.startLinger()
		p.linger(c)
	case err != nil:
		p.finish(c, err)
	case c.closed:
		p.finish(c, nil)
	}
}

// mark puts c on the round's list of replies to flush.
func (p *poller) mark(c *Conn) {
	if !c.dirty {
		c.dirty = true
		p.dirty = append(p.dirty, c)
	}
}

// flush writes the replies of the round. A socket that does not take them
// all is watched for room and not read until its replies are out, so a
// client that does not read cannot make the server buffer without bound.
func (p *poller) flush() {
	for _, c := range p.dirty {
		c.dirty = false
		if c.fc.fd < 0 {
			continue
		}
		if err := c.wr.Flush(); err != nil {
			p.finish(c, err)
			continue
		}
		c.setOmem(c.unsent())
		if !c.fc.waiting && c.fc.pending() > 0 {
			p.watchFor(c, syscall.EPOLLOUT)
		}
	}
	clear(p.dirty)
	p.dirty = p.dirty[:0]
}

// watchFor sets the events c's socket is watched for.
func (p *poller) watchFor(c *Conn, events uint32) {
	fc := c.fc
	fc.waiting = events&syscall.EPOLLOUT != 0
	ev := syscall.EpollEvent{Events: events, Fd: int32(fc.fd)}
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, fc.fd, &ev); err != nil {
		p.finish(c, os.NewSyscallError("epoll_ctl", err))
	}
}

// expire enforces deadlines: a read deadline passed makes the next read
// fail (the guard then decides: idle timeout or shutdown), a write
// deadline passed with replies still unsent closes the connection, and a
// lingering connection closes after its second.
//
// It returns false when the goroutine lost the loop (serve).
func (p *poller) expire(now time.Time) bool {
	t := now.UnixNano()
	for _, c := range p.conns {
		fc := c.fc
		switch {
		case fc.lingering():
			if t >= fc.lingerUntil {
				p.finish(c, nil)
			}
		case fc.pending() > 0:
			if d := fc.wdeadline.Load(); d != 0 && t >= d {
				p.finish(c, errTimeout)
			} else if err := p.s.checkOutput(c); err != nil {
				p.finish(c, err)
			}
		default:
			if d := fc.rdeadline.Load(); d != 0 && t >= d {
				fc.expired = true
				if !p.serve(c) {
					return false
				}
			}
		}
	}
	if len(p.dirty) > 0 {
		p.s.h.EndRound()
	}
	p.flush()
	return true
}

// linger discards what a lingering connection still sends (see
// lingerClose) and closes it at EOF.
func (p *poller) linger(c *Conn) {
	var buf [4096]byte
	for {
		n, err := rawRead(c.fc.fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			return
		}
		if n <= 0 {
			p.finish(c, nil)
			return
		}
	}
}

// finish closes c and reports it gone.
func (p *poller) finish(c *Conn, err error) {
	fc := c.fc
	if fc.fd < 0 {
		return
	}
	c.wr.Flush()
	fc.drain() // a last reply, such as QUIT's
	delete(p.conns, int32(fc.fd))
	syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fc.fd, nil)
	fc.release()
	c.closed = true
	if err == errDraining {
		err = nil
	}
	p.s.gone(c, err)
}

// fdConn is a connection's socket owned by a poller: a net.Conn whose reads
// and writes never wait. Only the owning poller reads and writes it; Close
// and the deadline setters may be called from any goroutine.
type fdConn struct {
	p            *poller
	fd           int // -1 once released; changed under mu
	laddr, raddr net.Addr

	out     []byte // replies the socket has not taken yet
	waiting bool   // watched for room to write out
	expired bool   // the read deadline passed: the next read fails

	lingerUntil int64 // Unix ns; 0 unless lingering

	// shared is set (by the poller's goroutine, before any other writes)
	// once other goroutines write the socket too (Conn.Stream): then out
	// and the writes to fd are wmu's, and the poller takes wmu for them.
	shared bool
	wmu    sync.Mutex

	rdeadline, wdeadline atomic.Int64 // Unix ns; 0 for none

	mu     sync.Mutex
	closed bool
}

// Read reads what the socket holds now: errWouldBlock when nothing.
func (f *fdConn) Read(b []byte) (int, error) {
	if f.expired {
		f.expired = false
		return 0, errTimeout
	}
	for {
		n, err := rawRead(f.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != 0:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes what the socket takes now and keeps the rest in out, for the
// poller to write when the socket has room.
func (f *fdConn) Write(b []byte) (int, error) {
	if f.shared {
		f.wmu.Lock()
		defer f.wmu.Unlock()
	}
	return f.write(b)
}

func (f *fdConn) write(b []byte) (int, error) {
	if len(f.out) > 0 {
		f.out = append(f.out, b...)
		return len(b), nil
	}
	for sent := 0; sent < len(b); {
		n, err := rawWrite(f.fd, b[sent:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			f.out = append(f.out, b[sent:]...)
			return len(b), nil
		case err != 0:
			return sent, os.NewSyscallError("write", err)
		}
		sent += n
	}
	return len(b), nil
}

// send is Write from a goroutine other than the poller's, on a shared
// socket (Conn.Stream). It returns what waits in out after it, and
// whether out was empty before: the poller must then watch for room.
func (f *fdConn) send(b []byte) (waiting int, started bool, err error) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.fd < 0 {
		return 0, false, net.ErrClosed
	}
	before := len(f.out)
	if _, err := f.write(b); err != nil {
		f.out = nil
		return 0, false, err
	}
	return len(f.out), before == 0 && len(f.out) > 0, nil
}

// pending is how many bytes wait in out.
func (f *fdConn) pending() int {
	if f.shared {
		f.wmu.Lock()
		defer f.wmu.Unlock()
	}
	return len(f.out)
}

// dropOut forgets what waits in out, unsent.
func (f *fdConn) dropOut() {
	if f.shared {
		f.wmu.Lock()
		defer f.wmu.Unlock()
	}
	f.out = nil
}

// drain writes out as far as the socket takes it.
func (f *fdConn) drain() error {
	if f.shared {
		f.wmu.Lock()
		defer f.wmu.Unlock()
	}
	for len(f.out) > 0 && f.fd >= 0 {
		n, err := rawWrite(f.fd, f.out)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return nil
		case err != 0:
			f.out = nil
			return os.NewSyscallError("write", err)
		}
		f.out = f.out[:copy(f.out, f.out[n:])]
	}
	if cap(f.out) > 64<<10 {
		f.out = nil
	}
	return nil
}

// Close ends the connection from any goroutine: it shuts the socket's read
// side and tells the poller, which closes it.
func (f *fdConn) Close() error {
	f.mu.Lock()
	if f.fd < 0 || f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	err := syscall.Shutdown(f.fd, syscall.SHUT_RD)
	f.mu.Unlock()
	if p := f.p; p != nil {
		p.post(func() { p.killed = append(p.killed, f) })
	}
	return err
}

// release closes the socket; only the poller calls it.
func (f *fdConn) release() {
	if f.shared {
		f.wmu.Lock()
		defer f.wmu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	syscall.Close(f.fd)
	f.fd = -1
	f.closed = true
}

// startLinger closes the write side and gives the client a second to stop
// sending: lingerClose's steps, without waiting.
func (f *fdConn) startLinger() {
	f.drain()
	syscall.Shutdown(f.fd, syscall.SHUT_WR)
	f.lingerUntil = time.Now().Add(time.Second).UnixNano()
}

func (f *fdConn) lingering() bool { return f.lingerUntil != 0 }

func (f *fdConn) LocalAddr() net.Addr  { return f.laddr }
func (f *fdConn) RemoteAddr() net.Addr { return f.raddr }

func (f *fdConn) SetDeadline(t time.Time) error {
	f.SetReadDeadline(t)
	return f.SetWriteDeadline(t)
}

func (f *fdConn) SetReadDeadline(t time.Time) error {
	f.rdeadline.Store(unixOrZero(t))
	return nil
}

func (f *fdConn) SetWriteDeadline(t time.Time) error {
	f.wdeadline.Store(unixOrZero(t))
	return nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// The system calls of the hot path are raw: they do not tell the runtime
// they are in the kernel. Each is non-blocking (the sockets are, and
// rawEpollWait does not wait), so it never holds the goroutine's P for
// long. A normal system call marks the P as in a system call; sysmon then
// takes the P from one it sees across two of its ticks and hands it to
// another thread, and shortens its own sleep to catch the next one. On a
// server pinned to one core that was thousands of thread switches a second
// (perf, docs/performance-history.md).

func rawRead(fd int, b []byte) (int, syscall.Errno)  { return rawIO(syscall.SYS_READ, fd, b) }
func rawWrite(fd int, b []byte) (int, syscall.Errno) { return rawIO(syscall.SYS_WRITE, fd, b) }

func rawIO(trap uintptr, fd int, b []byte) (int, syscall.Errno) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(p), uintptr(len(b)))
	return int(n), e
}

// rawEpollWait returns the events ready now, without waiting.
func rawEpollWait(epfd int, events []syscall.EpollEvent) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	return int(n), e
}
