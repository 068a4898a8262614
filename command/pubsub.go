package command

import (
	"sort"
	"strconv"
	"sync"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/resp"
)

// Publish/subscribe, as Redis has it: channels and glob patterns,
// messages pushed to each subscriber's connection (a RESP3 push, an array
// in RESP2). Sentinels find each other through it (__sentinel__:hello).

func registerPubSub(t *Table) {
	const flags = FlagLoading | FlagStale
	t.Register(
		&Command{Name: "subscribe", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of channels", Summary: "Listens for messages published to the channels.",
			Syntax: "channel [channel ...]", Handler: cmdSubscribe(false)},
		&Command{Name: "psubscribe", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of patterns", Summary: "Listens for messages published to channels matching the glob patterns.",
			Syntax: "pattern [pattern ...]", Handler: cmdSubscribe(true)},
		&Command{Name: "unsubscribe", Arity: -1, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of channels", Summary: "Stops listening to the channels, or to all of them.",
			Syntax: "[channel [channel ...]]", Handler: cmdUnsubscribe(false)},
		&Command{Name: "punsubscribe", Arity: -1, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of patterns", Summary: "Stops listening to the patterns, or to all of them.",
			Syntax: "[pattern [pattern ...]]", Handler: cmdUnsubscribe(true)},
		&Command{Name: "publish", Arity: 3, Flags: flags | FlagFast, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N+M) where N is the subscribers of the channel and M the patterns", Summary: "Posts a message to a channel; answers how many clients received it.",
			Syntax: "channel message", Handler: cmdPublish},
		&Command{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Inspects the channels and patterns in use.", Syntax: "subcommand",
			Subs: []*Command{
				{Name: "pubsub|channels", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(N) where N is the number of channels", Summary: "Lists the channels with subscribers, or those matching a pattern.",
					Syntax: "[pattern]", Handler: cmdPubsubChannels},
				{Name: "pubsub|numsub", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(N) where N is the number of channels", Summary: "Counts the subscribers of each channel.",
					Syntax: "[channel [channel ...]]", Handler: cmdPubsubNumsub},
				{Name: "pubsub|numpat", Arity: 2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Counts the patterns subscribed to.", Handler: cmdPubsubNumpat},
				{Name: "pubsub|help", Arity: 2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the PUBSUB subcommands.", Handler: HelpFor("pubsub")},
			}},
	)
	t.subscribedMode = t.AddMode(subscribedGate)
}

// pubsub is the server's channels and patterns, each with its subscribers.
type pubsub struct {
	mu       sync.Mutex
	channels map[string]map[*Client]struct{}
	patterns map[string]map[*Client]struct{}
}

// subscriptions is what one client listens to; guarded by the server's
// pubsub.mu.
type subscriptions struct {
	channels, patterns map[string]struct{}
}

func (s *subscriptions) count() int { return len(s.channels) + len(s.patterns) }

// subscribed reports how many channels and patterns c listens to; safe
// from any goroutine.
func (c *Client) subscribed() (channels, patterns int) {
	ps := &c.srv.pubsub
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(c.subs.channels), len(c.subs.patterns)
}

// subscribedGate keeps a RESP2 client that listens to anything to the
// commands Redis allows it (modeGate calls it).
func subscribedGate(c *Client, cmd *Command, _ [][]byte) bool {
	if c.proto >= 3 || c.subCount.Load() == 0 {
		return true
	}
	switch cmd.Name {
	case "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ping", "quit", "reset":
		return true
	}
	c.Errf("Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", cmd.Name)
	return false
}

// pubsubHeader writes one pub/sub reply or message header: a push in
// RESP3, an array in RESP2.
func pubsubHeader(w *resp.Writer, n int) { w.Push(n) }

func cmdSubscribe(pattern bool) func(c *Client, args [][]byte) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	return func(c *Client, args [][]byte) {
		if c.conn == nil {
			c.Err("ERR a client with no connection cannot subscribe")
			return
		}
		ps := &c.srv.pubsub
		for _, a := range args[1:] {
			name := string(a)
			ps.mu.Lock()
			own, all := &c.subs.channels, &ps.channels
			if pattern {
				own, all = &c.subs.patterns, &ps.patterns
			}
			if *own == nil {
				*own = map[string]struct{}{}
			}
			if *all == nil {
				*all = map[string]map[*Client]struct{}{}
			}
			if _, ok := (*own)[name]; !ok {
				(*own)[name] = struct{}{}
				if (*all)[name] == nil {
					(*all)[name] = map[*Client]struct{}{}
				}
				(*all)[name][c] = struct{}{}
			}
			n := c.subs.count()
			ps.mu.Unlock()
			c.setSubCount(n)
			pubsubHeader(c.w, 3)
			c.BulkString(kind)
			c.BulkString(name)
			c.Int(int64(n))
		}
		c.conn.SetClass(config.ClassPubSub)
	}
}

func cmdUnsubscribe(pattern bool) func(c *Client, args [][]byte) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	return func(c *Client, args [][]byte) {
		ps := &c.srv.pubsub
		ps.mu.Lock()
		own := c.subs.channels
		if pattern {
			own = c.subs.patterns
		}
		names := make([]string, 0, len(args)-1)
		for _, a := range args[1:] {
			names = append(names, string(a))
		}
		if len(names) == 0 {
			for name := range own {
				names = append(names, name)
			}
			sort.Strings(names)
		}
		ps.mu.Unlock()
		if len(names) == 0 {
			pubsubHeader(c.w, 3)
			c.BulkString(kind)
			c.Null()
			c.Int(int64(c.subCount.Load()))
			return
		}
		for _, name := range names {
			n := c.srv.unsubscribe(c, name, pattern)
			pubsubHeader(c.w, 3)
			c.BulkString(kind)
			c.BulkString(name)
			c.Int(int64(n))
		}
		if c.subCount.Load() == 0 && c.conn != nil {
			c.conn.SetClass(config.ClassNormal)
		}
	}
}

// unsubscribe takes c off one channel or pattern and returns how many it
// still listens to.
func (s *Server) unsubscribe(c *Client, name string, pattern bool) int {
	ps := &s.pubsub
	ps.mu.Lock()
	defer ps.mu.Unlock()
	own, all := c.subs.channels, ps.channels
	if pattern {
		own, all = c.subs.patterns, ps.patterns
	}
	if _, ok := own[name]; ok {
		delete(own, name)
		delete(all[name], c)
		if len(all[name]) == 0 {
			delete(all, name)
		}
	}
	n := c.subs.count()
	c.setSubCount(n)
	return n
}

// unsubscribeAll forgets every subscription of a client that has gone.
func (s *Server) unsubscribeAll(c *Client) {
	ps := &s.pubsub
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for name := range c.subs.channels {
		delete(ps.channels[name], c)
		if len(ps.channels[name]) == 0 {
			delete(ps.channels, name)
		}
	}
	for name := range c.subs.patterns {
		delete(ps.patterns[name], c)
		if len(ps.patterns[name]) == 0 {
			delete(ps.patterns, name)
		}
	}
	c.subs = subscriptions{}
	c.setSubCount(0)
}

func cmdPublish(c *Client, args [][]byte) {
	c.Int(int64(c.srv.Publish(string(args[1]), args[2])))
}

// Publish sends message to the subscribers of channel and of the patterns
// it matches, and returns how many deliveries it made. Each receiver gets
// it in its own protocol: a RESP3 push, or an array in RESP2.
func (s *Server) Publish(channel string, message []byte) int {
	type delivery struct {
		c       *Client
		pattern string // "" for a channel subscription
	}
	var to []delivery
	ps := &s.pubsub
	ps.mu.Lock()
	for c := range ps.channels[channel] {
		to = append(to, delivery{c: c})
	}
	for pat, subs := range ps.patterns {
		if GlobMatch(pat, channel) {
			for c := range subs {
				to = append(to, delivery{c: c, pattern: pat})
			}
		}
	}
	ps.mu.Unlock()
	var buf [2][]byte // encoded once per protocol and kind
	for _, d := range to {
		if d.c.conn == nil {
			continue
		}
		var b []byte
		w := resp.NewWriter(nil)
		w.Proto = d.c.Proto()
		if d.pattern == "" {
			if cached := buf[w.Proto-2]; cached != nil {
				b = cached
			} else {
				w.Push(3)
				w.BulkString("message")
				w.BulkString(channel)
				w.Bulk(message)
				b = append([]byte(nil), w.Bytes()...)
				buf[w.Proto-2] = b
			}
		} else {
			w.Push(4)
			w.BulkString("pmessage")
			w.BulkString(d.pattern)
			w.BulkString(channel)
			w.Bulk(message)
			b = append([]byte(nil), w.Bytes()...)
		}
		d.c.conn.Push(b)
	}
	return len(to)
}

func cmdPubsubChannels(c *Client, args [][]byte) {
	ps := &c.srv.pubsub
	ps.mu.Lock()
	var names []string
	for name := range ps.channels {
		if len(args) < 3 || GlobMatch(string(args[2]), name) {
			names = append(names, name)
		}
	}
	ps.mu.Unlock()
	sort.Strings(names)
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

func cmdPubsubNumsub(c *Client, args [][]byte) {
	ps := &c.srv.pubsub
	ps.mu.Lock()
	counts := make([]int, len(args)-2)
	for i, a := range args[2:] {
		counts[i] = len(ps.channels[string(a)])
	}
	ps.mu.Unlock()
	c.Array(2 * len(counts)) // a flat array in RESP3 too, as in Redis
	for i, a := range args[2:] {
		c.Bulk(a)
		c.Int(int64(counts[i]))
	}
}

func cmdPubsubNumpat(c *Client, _ [][]byte) {
	ps := &c.srv.pubsub
	ps.mu.Lock()
	n := len(ps.patterns)
	ps.mu.Unlock()
	c.Int(int64(n))
}

// pubsubFlags is CLIENT LIST's sub= and psub= of c.
func (c *Client) pubsubFlags() string {
	ch, pat := c.subscribed()
	return "sub=" + strconv.Itoa(ch) + " psub=" + strconv.Itoa(pat)
}

// setSubCount records how many channels and patterns c listens to.
func (c *Client) setSubCount(n int) {
	c.subCount.Store(int32(n))
	c.SetMode(c.srv.table.subscribedMode, n > 0)
}
