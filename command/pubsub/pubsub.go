// Package pubsub is the family of publish/subscribe commands, as Redis has
// them: SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and
// PUBSUB, over channels and glob patterns, each message pushed to its
// subscribers' connections (a RESP3 push, an array in RESP2). Sentinels
// find each other through it (__sentinel__:hello).
//
// It owns the channels and patterns with their subscribers, each client's
// subscriptions (a Slot), the subscribed connection mode, CLIENT LIST's
// sub= and psub=, and INFO stats' pubsub_channels and pubsub_patterns; it is the table's Publisher, so that whatever
// else publishes (scripts' native twins) goes through it.
//
// It imports the command core, config, engine (INFO's renderers take it)
// and resp; never another family, the transport or the assembly.
package pubsub

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// Family is the pub/sub commands and the channels and patterns they
// serve.
type Family struct {
	slot       command.Slot // each client's *subscriptions, set and read under mu
	subscribed command.Mode // on while a client listens to anything

	mu       sync.Mutex
	channels map[string]map[*command.Client]struct{}
	patterns map[string]map[*command.Client]struct{}
}

// New returns the family with no subscribers yet.
func New() *Family {
	return &Family{
		channels: map[string]map[*command.Client]struct{}{},
		patterns: map[string]map[*command.Client]struct{}{},
	}
}

// subscriptions is what one client listens to; guarded by Family.mu.
type subscriptions struct {
	channels, patterns map[string]struct{}
}

func (s *subscriptions) count() int { return len(s.channels) + len(s.patterns) }

// Register adds the family's commands, its connection mode, its
// per-client state and what it forgets of a client reset or gone, its
// CLIENT LIST fields, and itself as the table's Publisher to t.
func (f *Family) Register(t *command.Table, _ command.Env) {
	const flags = command.FlagLoading | command.FlagStale
	t.Register(
		&command.Command{Name: "subscribe", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of channels", Summary: "Listens for messages published to the channels.",
			Syntax: "channel [channel ...]", Handler: f.cmdSubscribe(false)},
		&command.Command{Name: "psubscribe", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of patterns", Summary: "Listens for messages published to channels matching the glob patterns.",
			Syntax: "pattern [pattern ...]", Handler: f.cmdSubscribe(true)},
		&command.Command{Name: "unsubscribe", Arity: -1, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of channels", Summary: "Stops listening to the channels, or to all of them.",
			Syntax: "[channel [channel ...]]", Handler: f.cmdUnsubscribe(false)},
		&command.Command{Name: "punsubscribe", Arity: -1, Flags: flags, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N) where N is the number of patterns", Summary: "Stops listening to the patterns, or to all of them.",
			Syntax: "[pattern [pattern ...]]", Handler: f.cmdUnsubscribe(true)},
		&command.Command{Name: "publish", Arity: 3, Flags: flags | command.FlagFast, Group: "pubsub", Since: "0.1.0",
			Complexity: "O(N+M) where N is the subscribers of the channel and M the patterns", Summary: "Posts a message to a channel; answers how many clients received it.",
			Syntax: "channel message", Handler: f.cmdPublish},
		&command.Command{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Inspects the channels and patterns in use.", Syntax: "subcommand",
			Subs: []*command.Command{
				{Name: "pubsub|channels", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(N) where N is the number of channels", Summary: "Lists the channels with subscribers, or those matching a pattern.",
					Syntax: "[pattern]", Handler: f.cmdChannels},
				{Name: "pubsub|numsub", Arity: -2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(N) where N is the number of channels", Summary: "Counts the subscribers of each channel.",
					Syntax: "[channel [channel ...]]", Handler: f.cmdNumsub},
				{Name: "pubsub|numpat", Arity: 2, Flags: flags, Group: "pubsub", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Counts the patterns subscribed to.", Handler: f.cmdNumpat},
				{Name: "pubsub|help", Arity: 2, Flags: flags, Group: "pubsub", Since: "0.1.0", ACLCats: []string{}, // @slow alone, as in Redis
					Complexity: "O(1)", Summary: "Lists the PUBSUB subcommands.", Handler: command.HelpFor("pubsub")},
			}},
	)
	f.slot = t.NewSlot()
	f.subscribed = t.AddMode(subscribedGate)
	t.OnClientReset(f.unsubscribeAll)
	t.OnClientClosed(f.unsubscribeAll)
	t.AddClientInfo(f.clientInfo)
	t.SetPublisher(f)
	t.ExtendInfo("stats", f.infoStats)
}

// infoStats adds Redis's pubsub_channels and pubsub_patterns to INFO
// stats: the channels and the patterns with a subscriber.
func (f *Family) infoStats(_ *engine.Engine, b *strings.Builder) {
	f.mu.Lock()
	channels, patterns := len(f.channels), len(f.patterns)
	f.mu.Unlock()
	command.InfoLine(b, "pubsub_channels", channels)
	command.InfoLine(b, "pubsub_patterns", patterns)
}

// subsOf is c's subscriptions, made at the first; the caller holds f.mu.
func (f *Family) subsOf(c *command.Client) *subscriptions {
	s, _ := c.Slot(f.slot).(*subscriptions)
	if s == nil {
		s = &subscriptions{}
		c.SetSlot(f.slot, s)
	}
	return s
}

// counts is how many channels and patterns c listens to; safe from any
// goroutine.
func (f *Family) counts(c *command.Client) (channels, patterns int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, _ := c.Slot(f.slot).(*subscriptions); s != nil {
		return len(s.channels), len(s.patterns)
	}
	return 0, 0
}

// clientInfo is CLIENT LIST's sub= and psub= of c.
func (f *Family) clientInfo(c *command.Client, b []byte) []byte {
	ch, pat := f.counts(c)
	b = append(b, " sub="...)
	b = strconv.AppendInt(b, int64(ch), 10)
	b = append(b, " psub="...)
	return strconv.AppendInt(b, int64(pat), 10)
}

// subscribedGate keeps a RESP2 client that listens to anything to the
// commands Redis allows it (the modes gate calls it while the client's
// subscribed mode is on).
func subscribedGate(c *command.Client, cmd *command.Command, _ [][]byte) bool {
	if c.Proto() >= 3 {
		return true
	}
	switch cmd.Name {
	case "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ping", "quit", "reset":
		return true
	}
	c.Errf("Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", cmd.Name)
	return false
}

// setSubscribed records whether c listens to anything (n channels and
// patterns) in its mode.
func (f *Family) setSubscribed(c *command.Client, n int) { c.SetMode(f.subscribed, n > 0) }

func (f *Family) cmdSubscribe(pattern bool) func(c *command.Client, args [][]byte) {
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	return func(c *command.Client, args [][]byte) {
		if !c.HasConn() {
			c.Err("ERR a client with no connection cannot subscribe")
			return
		}
		for _, a := range args[1:] {
			name := string(a)
			f.mu.Lock()
			subs := f.subsOf(c)
			own, all := &subs.channels, f.channels
			if pattern {
				own, all = &subs.patterns, f.patterns
			}
			if *own == nil {
				*own = map[string]struct{}{}
			}
			if _, ok := (*own)[name]; !ok {
				(*own)[name] = struct{}{}
				if all[name] == nil {
					all[name] = map[*command.Client]struct{}{}
				}
				all[name][c] = struct{}{}
			}
			n := subs.count()
			f.mu.Unlock()
			f.setSubscribed(c, n)
			c.Push(3)
			c.BulkString(kind)
			c.BulkString(name)
			c.Int(int64(n))
		}
		c.SetClass(config.ClassPubSub)
	}
}

func (f *Family) cmdUnsubscribe(pattern bool) func(c *command.Client, args [][]byte) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	return func(c *command.Client, args [][]byte) {
		names := make([]string, 0, len(args)-1)
		for _, a := range args[1:] {
			names = append(names, string(a))
		}
		f.mu.Lock()
		subs := f.subsOf(c)
		if len(names) == 0 {
			own := subs.channels
			if pattern {
				own = subs.patterns
			}
			for name := range own {
				names = append(names, name)
			}
			sort.Strings(names)
		}
		n := subs.count()
		f.mu.Unlock()
		if len(names) == 0 {
			c.Push(3)
			c.BulkString(kind)
			c.Null()
			c.Int(int64(n))
			return
		}
		for _, name := range names {
			n = f.unsubscribe(c, name, pattern)
			c.Push(3)
			c.BulkString(kind)
			c.BulkString(name)
			c.Int(int64(n))
		}
		if n == 0 && c.HasConn() {
			c.SetClass(config.ClassNormal)
		}
	}
}

// unsubscribe takes c off one channel or pattern and returns how many it
// still listens to.
func (f *Family) unsubscribe(c *command.Client, name string, pattern bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.subsOf(c)
	own, all := subs.channels, f.channels
	if pattern {
		own, all = subs.patterns, f.patterns
	}
	if _, ok := own[name]; ok {
		delete(own, name)
		delete(all[name], c)
		if len(all[name]) == 0 {
			delete(all, name)
		}
	}
	n := subs.count()
	f.setSubscribed(c, n)
	return n
}

// unsubscribeAll forgets every subscription of a client that has gone or
// been RESET.
func (f *Family) unsubscribeAll(c *command.Client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	subs, _ := c.Slot(f.slot).(*subscriptions)
	if subs == nil {
		return
	}
	for name := range subs.channels {
		delete(f.channels[name], c)
		if len(f.channels[name]) == 0 {
			delete(f.channels, name)
		}
	}
	for name := range subs.patterns {
		delete(f.patterns[name], c)
		if len(f.patterns[name]) == 0 {
			delete(f.patterns, name)
		}
	}
	*subs = subscriptions{}
	f.setSubscribed(c, 0)
}

func (f *Family) cmdPublish(c *command.Client, args [][]byte) {
	c.Int(int64(f.Publish(string(args[1]), args[2])))
}

// Publish sends message to the subscribers of channel and of the patterns
// it matches, and returns how many deliveries it made. Each receiver gets
// it in its own protocol: a RESP3 push, or an array in RESP2.
func (f *Family) Publish(channel string, message []byte) int {
	type delivery struct {
		c       *command.Client
		pattern string // "" for a channel subscription
	}
	var to []delivery
	f.mu.Lock()
	for c := range f.channels[channel] {
		to = append(to, delivery{c: c})
	}
	for pat, subs := range f.patterns {
		if command.GlobMatch(pat, channel) {
			for c := range subs {
				to = append(to, delivery{c: c, pattern: pat})
			}
		}
	}
	f.mu.Unlock()
	var buf [2][]byte // encoded once per protocol and kind
	for _, d := range to {
		if !d.c.HasConn() {
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
		d.c.Deliver(b)
	}
	return len(to)
}

func (f *Family) cmdChannels(c *command.Client, args [][]byte) {
	f.mu.Lock()
	var names []string
	for name := range f.channels {
		if len(args) < 3 || command.GlobMatch(string(args[2]), name) {
			names = append(names, name)
		}
	}
	f.mu.Unlock()
	sort.Strings(names)
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

func (f *Family) cmdNumsub(c *command.Client, args [][]byte) {
	f.mu.Lock()
	counts := make([]int, len(args)-2)
	for i, a := range args[2:] {
		counts[i] = len(f.channels[string(a)])
	}
	f.mu.Unlock()
	c.Array(2 * len(counts)) // a flat array in RESP3 too, as in Redis
	for i, a := range args[2:] {
		c.Bulk(a)
		c.Int(int64(counts[i]))
	}
}

func (f *Family) cmdNumpat(c *command.Client, _ [][]byte) {
	f.mu.Lock()
	n := len(f.patterns)
	f.mu.Unlock()
	c.Int(int64(n))
}
