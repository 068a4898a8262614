package keyspace

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// The blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP). A client whose keys are empty blocks as WAIT does
// (command.Client.Block): no goroutine waits for it, and its connection's
// event loop goes on serving others. It waits in a queue per key; a write
// to one of its keys (command.Table.OnKeysReady, once the writer's command
// is done) serves the queue from its first client on, each popping from
// that key, until the key is empty, as Redis serves the first blocked
// first. A timeout (fractional seconds, on the engine's clock; 0 waits
// for ever) answers nil. Inside MULTI or a script a blocking pop does not
// wait: it answers as its timeout would. A client that closes while
// blocked leaves its queues. A served pop is a write like any other: the
// keys' new states go down the change stream.
//
// Unlike Redis, the commands a blocked client sends after its blocking
// one run meanwhile (their replies follow the blocking one's), as after
// WAIT; a blocking pop among them answers at once, as in MULTI.

// popper is one blocked client's pop: it tries key and, when it pops,
// renders the reply in proto and names the key its write made ready for
// others (BLMOVE's destination), if any.
type popper func(eng *engine.Engine, now int64, key []byte, proto int) (reply []byte, pushed []byte, ok bool)

type waiter struct {
	c      *command.Client
	keys   []string
	pop    popper
	proto  int
	finish func([]byte)
	stop   chan struct{} // closed when it no longer waits: ends its timer
	done   bool          // under blockers.mu
}

// blockers is the family's blocked clients, by key in the order they
// blocked, and by client.
type blockers struct {
	eng   *engine.Engine
	clock clock.Clock
	count *atomic.Int64 // command.Table.OnKeysReady's
	done  <-chan struct{}

	mu       sync.Mutex
	byKey    map[string][]*waiter
	byClient map[*command.Client]*waiter
}

func registerBlockingPops(t *command.Table, env command.Env) {
	b := &blockers{eng: env.Engine, clock: env.Clock, done: env.Done, byKey: map[string][]*waiter{}, byClient: map[*command.Client]*waiter{}}
	if env.Clock == nil && env.Engine != nil {
		b.clock = env.Engine.Clock()
	}
	b.count = t.OnKeysReady(b.serve)
	t.OnClientClosed(b.forget)
	const blk = command.FlagWrite | command.FlagBlocking
	cmd := func(name string, arity int, flags command.Flag, first, last int, group, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: 1,
			Group: group, Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	movable := func(c *command.Command) *command.Command {
		c.FirstKey, c.LastKey, c.Step = 0, 0, 0
		c.Keys, c.KeyArgs = numKeysFrom(2, false), numKeysFrom(2, false)
		return c
	}
	t.Register(
		cmd("blpop", -3, blk|command.FlagNoScript, 1, -2, "list", "O(N) where N is the number of provided keys",
			"LPOP from the first non-empty list of the keys, or blocks until one is pushed to or timeout seconds pass (0: for ever); answers [key, element] or nil.",
			"key [key ...] timeout", b.cmdBPop(false, false)),
		cmd("brpop", -3, blk|command.FlagNoScript, 1, -2, "list", "O(N) where N is the number of provided keys",
			"RPOP from the first non-empty list of the keys, or blocks as BLPOP does; answers [key, element] or nil.",
			"key [key ...] timeout", b.cmdBPop(false, true)),
		cmd("blmove", 6, blk|command.FlagDenyOOM|command.FlagNoScript, 1, 2, "list", "O(1)",
			"LMOVE, or blocks until source is pushed to or timeout seconds pass; answers the element or nil.",
			"source destination LEFT|RIGHT LEFT|RIGHT timeout", b.cmdBLMove),
		cmd("brpoplpush", 4, blk|command.FlagDenyOOM|command.FlagNoScript, 1, 2, "list", "O(1)",
			"BLMOVE source destination RIGHT LEFT timeout.", "source destination timeout", b.cmdBRPopLPush),
		movable(cmd("blmpop", -5, blk, 0, 0, "list", "O(N+M) where N is the number of provided keys and M is the number of elements returned",
			"LMPOP, or blocks until one of the keys is pushed to or timeout seconds pass; answers [key, [element, ...]] or nil.",
			"timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]", b.cmdBLMPop)),
		cmd("bzpopmin", -3, blk|command.FlagNoScript|command.FlagFast, 1, -2, "sorted_set", "O(log(N)) with N being the number of elements in the sorted set",
			"ZPOPMIN from the first non-empty sorted set of the keys, or blocks until one is added to or timeout seconds pass; answers [key, member, score] or nil.",
			"key [key ...] timeout", b.cmdBPop(true, false)),
		cmd("bzpopmax", -3, blk|command.FlagNoScript|command.FlagFast, 1, -2, "sorted_set", "O(log(N)) with N being the number of elements in the sorted set",
			"ZPOPMAX from the first non-empty sorted set of the keys, or blocks as BZPOPMIN does; answers [key, member, score] or nil.",
			"key [key ...] timeout", b.cmdBPop(true, true)),
		movable(cmd("bzmpop", -5, blk, 0, 0, "sorted_set", "O(K) + O(M*log(N)) where K is the number of keys, N the members of the sorted set and M the members popped",
			"ZMPOP, or blocks until one of the keys is added to or timeout seconds pass; answers [key, [[member, score], ...]] or nil.",
			"timeout numkeys key [key ...] MIN|MAX [COUNT count]", b.cmdBZMPop)),
	)
}

// parseTimeout reads a blocking command's timeout in seconds as Redis 7.0
// does (getTimeoutFromObjectOrReply): a long double, times 1000,
// truncated to whole milliseconds as a C cast does (so that past the
// int64 range, infinities included, it is negative); 0 waits for ever.
func parseTimeout(b []byte, now int64) (time.Duration, error) {
	errFloat := command.WireError("ERR timeout is not a float or out of range")
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, errFloat
	}
	f, _, err := big.ParseFloat(string(b), 10, 80, big.ToNearestEven)
	if err != nil {
		return 0, errFloat
	}
	ms, acc := new(big.Float).Mul(f, big.NewFloat(1000)).Int64()
	if f.IsInf() || (acc != big.Exact && (ms == math.MaxInt64 || ms == math.MinInt64)) {
		ms = math.MinInt64 // the x86 cast of an out-of-range long double
	}
	if ms < 0 {
		return 0, command.WireError("ERR timeout is negative")
	}
	if ms > 0 && ms > math.MaxInt64-now/1e6 {
		return 0, command.WireError("ERR timeout is out of range")
	}
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond, nil
}

// block answers c's blocking command: at once when pop succeeds on one of
// keys, in order (or when an error stops it), or, when c can wait, once a
// write makes one of them ready or the timeout passes (nil); when c
// cannot wait (MULTI, a script), nil as a timeout would (nilReply).
func (b *blockers) block(c *command.Client, keys [][]byte, timeout time.Duration, pop popper, nilReply func(c *command.Client)) {
	proto := c.ReplyProto()
	b.mu.Lock()
	waiting := b.byClient[c] != nil // a blocking command pipelined behind a blocked one
	b.mu.Unlock()
	var finish func([]byte)
	can := false
	if !waiting && !c.Calling() {
		finish, can = c.Block()
	}
	if !can { // inside EXEC or a script, whose shards may be held: no lock of ours
		for _, k := range keys {
			if reply, _, ok := pop(c.Engine(), c.Now(), k, proto); reply != nil || ok {
				c.Raw(reply)
				return
			}
		}
		nilReply(c)
		return
	}
	b.count.Add(1) // before the last look: a write after it finds us counted
	b.mu.Lock()
	for _, k := range keys {
		reply, pushed, ok := pop(b.eng, c.Now(), k, proto)
		if reply == nil && !ok {
			continue
		}
		b.mu.Unlock()
		b.count.Add(-1)
		c.Unblock()
		c.Raw(reply)
		if pushed != nil {
			b.serve([][]byte{pushed})
		}
		return
	}
	w := &waiter{c: c, pop: pop, proto: proto, finish: finish, stop: make(chan struct{})}
	for _, k := range keys {
		if !containsString(w.keys, string(k)) {
			w.keys = append(w.keys, string(k))
			b.byKey[string(k)] = append(b.byKey[string(k)], w)
		}
	}
	b.byClient[c] = w
	b.mu.Unlock()
	if timeout > 0 {
		go b.expire(c, w, timeout)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// expire answers nil for w once timeout passes, unless it no longer waits.
func (b *blockers) expire(c *command.Client, w *waiter, timeout time.Duration) {
	select {
	case <-w.stop:
		return
	case <-b.done:
		return
	case <-b.clock.After(timeout):
	}
	b.mu.Lock()
	if w.done {
		b.mu.Unlock()
		return
	}
	b.remove(c, w)
	b.mu.Unlock()
	out := resp.NewWriter(nil)
	out.Proto = w.proto
	out.NullArray()
	w.finish(append([]byte(nil), out.Bytes()...))
}

// remove takes w out of every queue; under mu.
func (b *blockers) remove(c *command.Client, w *waiter) {
	w.done = true
	close(w.stop)
	for _, k := range w.keys {
		q := b.byKey[k]
		for i, x := range q {
			if x == w {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.byKey, k)
		} else {
			b.byKey[k] = q
		}
	}
	if b.byClient[c] == w {
		delete(b.byClient, c)
	}
	b.count.Add(-1)
}

// forget drops a closed client's wait.
func (b *blockers) forget(c *command.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.byClient[c]; w != nil {
		b.remove(c, w)
	}
}

// serve serves the clients blocked on keys, each key's from the first
// blocked on, until one finds the key empty; a served BLMOVE's
// destination is served in turn.
func (b *blockers) serve(keys [][]byte) {
	b.mu.Lock()
	var done []func()
	for len(keys) > 0 {
		k := keys[0]
		keys = keys[1:]
		for {
			q := b.byKey[string(k)]
			if len(q) == 0 {
				break
			}
			w := q[0]
			reply, pushed, ok := w.pop(b.eng, b.eng.Now(), k, w.proto)
			if !ok {
				break
			}
			b.remove(w.c, w)
			finish := w.finish
			done = append(done, func() { finish(reply) })
			if pushed != nil {
				keys = append(keys, pushed)
			}
		}
	}
	b.mu.Unlock()
	for _, fn := range done {
		fn()
	}
}

// replyWriter renders one reply in proto.
func replyWriter(proto int) *resp.Writer {
	w := resp.NewWriter(nil)
	w.Proto = proto
	return w
}

// errReply renders WRONGTYPE, the one error a pop meets (at a key of
// another type), which stops it.
func errReply(_ error, proto int) []byte {
	w := replyWriter(proto)
	w.Error(command.ErrWrongType)
	return w.Bytes()
}

// cmdBPop is BLPOP and BRPOP, and with zset BZPOPMIN and BZPOPMAX.
func (b *blockers) cmdBPop(zset, tail bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		timeout, err := parseTimeout(args[len(args)-1], c.Now())
		if err != nil {
			c.Error(err)
			return
		}
		pop := func(eng *engine.Engine, now int64, key []byte, proto int) ([]byte, []byte, bool) {
			w := replyWriter(proto)
			if zset {
				k, items, left, err := zpopFirst(eng, now, [][]byte{key}, tail, 1)
				switch {
				case err != nil:
					return errReply(err, proto), nil, false
				case k == nil:
					return nil, nil, false
				}
				notifyLeft(c, config.NotifyZSet, zpopEvent(tail), key, left)
				w.Array(3)
				w.Bulk(key)
				w.BulkString(items[0].Member)
				w.Double(items[0].Score)
				return w.Bytes(), nil, true
			}
			k, popped, left, err := lpopFirst(eng, now, [][]byte{key}, !tail, 1)
			switch {
			case err != nil:
				return errReply(err, proto), nil, false
			case k == nil:
				return nil, nil, false
			}
			notifyLeft(c, config.NotifyList, popEvent(!tail), key, left)
			w.Array(2)
			w.Bulk(key)
			w.Bulk(popped[0])
			return w.Bytes(), nil, true
		}
		b.block(c, args[1:len(args)-1], timeout, pop, (*command.Client).NullArray)
	}
}

func (b *blockers) cmdBLMove(c *command.Client, args [][]byte) {
	from, err := listEnd(args[3])
	if err != nil {
		c.Error(err)
		return
	}
	to, err := listEnd(args[4])
	if err != nil {
		c.Error(err)
		return
	}
	b.blmove(c, args[1], args[2], from, to, args[5])
}

func (b *blockers) cmdBRPopLPush(c *command.Client, args [][]byte) {
	b.blmove(c, args[1], args[2], false, true, args[3])
}

func (b *blockers) blmove(c *command.Client, src, dst []byte, fromHead, toHead bool, timeoutArg []byte) {
	timeout, err := parseTimeout(timeoutArg, c.Now())
	if err != nil {
		c.Error(err)
		return
	}
	dstKey := append([]byte(nil), dst...)
	pop := func(eng *engine.Engine, now int64, key []byte, proto int) ([]byte, []byte, bool) {
		v, ok, left, err := moveElement(eng, now, key, dstKey, fromHead, toHead)
		switch {
		case err != nil:
			return errReply(err, proto), nil, false
		case !ok:
			return nil, nil, false
		}
		notifyMove(c, key, dstKey, fromHead, toHead, left)
		w := replyWriter(proto)
		w.Bulk(v)
		return w.Bytes(), dstKey, true
	}
	b.block(c, [][]byte{src}, timeout, pop, (*command.Client).Null)
}

func (b *blockers) cmdBLMPop(c *command.Client, args [][]byte) {
	timeout, err := parseTimeout(args[1], c.Now())
	if err != nil {
		c.Error(err)
		return
	}
	keys, where, count, err := parseMPop(args, 2, [2]string{"left", "right"})
	if err != nil {
		c.Error(err)
		return
	}
	pop := func(eng *engine.Engine, now int64, key []byte, proto int) ([]byte, []byte, bool) {
		k, popped, left, err := lpopFirst(eng, now, [][]byte{key}, where == 0, count)
		switch {
		case err != nil:
			return errReply(err, proto), nil, false
		case k == nil:
			return nil, nil, false
		}
		notifyLeft(c, config.NotifyList, popEvent(where == 0), key, left)
		w := replyWriter(proto)
		w.Array(2)
		w.Bulk(key)
		w.Array(len(popped))
		for _, v := range popped {
			w.Bulk(v)
		}
		return w.Bytes(), nil, true
	}
	b.block(c, keys, timeout, pop, (*command.Client).NullArray)
}

func (b *blockers) cmdBZMPop(c *command.Client, args [][]byte) {
	timeout, err := parseTimeout(args[1], c.Now())
	if err != nil {
		c.Error(err)
		return
	}
	keys, where, count, err := parseMPop(args, 2, [2]string{"min", "max"})
	if err != nil {
		c.Error(err)
		return
	}
	pop := func(eng *engine.Engine, now int64, key []byte, proto int) ([]byte, []byte, bool) {
		k, items, left, err := zpopFirst(eng, now, [][]byte{key}, where == 1, count)
		switch {
		case err != nil:
			return errReply(err, proto), nil, false
		case k == nil:
			return nil, nil, false
		}
		notifyLeft(c, config.NotifyZSet, zpopEvent(where == 1), key, left)
		w := replyWriter(proto)
		w.Array(2)
		w.Bulk(key)
		w.Array(len(items))
		for _, it := range items {
			w.Array(2)
			w.BulkString(it.Member)
			w.Double(it.Score)
		}
		return w.Bytes(), nil, true
	}
	b.block(c, keys, timeout, pop, (*command.Client).NullArray)
}
