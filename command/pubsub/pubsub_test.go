package pubsub_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/config"
)

// bulk is a RESP bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// TestPubSubSteps walks three connections through subscriptions, messages
// in both protocols, the subscribed mode, PUBSUB and RESET, one step at a
// time: each step's reply, and what each connection was pushed.
func TestPubSubSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	a, b, r3, p := dial(t, s, "a:1"), dial(t, s, "b:1"), dial(t, s, "r3:1"), dial(t, s, "p:1")
	conns := map[string]*conn{"a": a, "b": b, "r3": r3, "p": p}
	if got := r3.Do("HELLO", "3"); !strings.HasPrefix(got, "%") {
		t.Fatalf("HELLO 3 answered %q", got)
	}
	subscribeNotAllowed := "-ERR Can't execute 'echo': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
	steps := []struct {
		on   string
		args []string
		want string
		mail map[string]string
	}{
		{on: "a", args: []string{"SUBSCRIBE", "ch", "news"},
			want: "*3\r\n" + bulk("subscribe") + bulk("ch") + ":1\r\n*3\r\n" + bulk("subscribe") + bulk("news") + ":2\r\n"},
		{on: "b", args: []string{"PSUBSCRIBE", "n*"}, want: "*3\r\n" + bulk("psubscribe") + bulk("n*") + ":1\r\n"},
		{on: "r3", args: []string{"SUBSCRIBE", "news"}, want: ">3\r\n" + bulk("subscribe") + bulk("news") + ":1\r\n"},
		{on: "p", args: []string{"PUBLISH", "news", "hi"}, want: ":3\r\n", mail: map[string]string{
			"a":  "*3\r\n" + bulk("message") + bulk("news") + bulk("hi"),
			"b":  "*4\r\n" + bulk("pmessage") + bulk("n*") + bulk("news") + bulk("hi"),
			"r3": ">3\r\n" + bulk("message") + bulk("news") + bulk("hi"),
		}},
		{on: "p", args: []string{"PUBLISH", "nobody", "x"}, want: ":1\r\n", mail: map[string]string{
			"b": "*4\r\n" + bulk("pmessage") + bulk("n*") + bulk("nobody") + bulk("x"),
		}},
		{on: "a", args: []string{"ECHO", "x"}, want: subscribeNotAllowed},
		{on: "a", args: []string{"PING"}, want: "*2\r\n" + bulk("pong") + bulk("")},
		{on: "r3", args: []string{"ECHO", "x"}, want: bulk("x")},
		{on: "r3", args: []string{"PING"}, want: "+PONG\r\n"},
		{on: "p", args: []string{"PUBSUB", "CHANNELS"}, want: "*2\r\n" + bulk("ch") + bulk("news")},
		{on: "p", args: []string{"PUBSUB", "CHANNELS", "n*"}, want: "*1\r\n" + bulk("news")},
		{on: "p", args: []string{"PUBSUB", "NUMSUB", "news", "none"}, want: "*4\r\n" + bulk("news") + ":2\r\n" + bulk("none") + ":0\r\n"},
		{on: "p", args: []string{"PUBSUB", "NUMPAT"}, want: ":1\r\n"},
		{on: "a", args: []string{"UNSUBSCRIBE", "nope"}, want: "*3\r\n" + bulk("unsubscribe") + bulk("nope") + ":2\r\n"},
		{on: "a", args: []string{"UNSUBSCRIBE"},
			want: "*3\r\n" + bulk("unsubscribe") + bulk("ch") + ":1\r\n*3\r\n" + bulk("unsubscribe") + bulk("news") + ":0\r\n"},
		{on: "a", args: []string{"UNSUBSCRIBE"}, want: "*3\r\n" + bulk("unsubscribe") + "$-1\r\n:0\r\n"},
		{on: "a", args: []string{"ECHO", "x"}, want: bulk("x")},
		{on: "a", args: []string{"PING"}, want: "+PONG\r\n"},
		{on: "b", args: []string{"PUNSUBSCRIBE", "n*"}, want: "*3\r\n" + bulk("punsubscribe") + bulk("n*") + ":0\r\n"},
		{on: "p", args: []string{"PUBSUB", "NUMPAT"}, want: ":0\r\n"},
		{on: "p", args: []string{"PUBLISH", "news", "bye"}, want: ":1\r\n", mail: map[string]string{
			"r3": ">3\r\n" + bulk("message") + bulk("news") + bulk("bye"),
		}},
	}
	for i, st := range steps {
		if got := conns[st.on].Do(st.args...); got != st.want {
			t.Fatalf("step %d: %s %q answered %q, want %q", i, st.on, st.args, got, st.want)
		}
		for name, c := range conns {
			if got := c.Mailed(); got != st.mail[name] {
				t.Fatalf("step %d: %s was pushed %q, want %q", i, name, got, st.mail[name])
			}
		}
	}
}

// TestSubscriptionsEndWithTheClient: RESET and a closed connection forget
// every subscription, and with them the pub/sub class and mode.
func TestSubscriptionsEndWithTheClient(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	a, b, p := dial(t, s, "a:1"), dial(t, s, "b:1"), dial(t, s, "p:1")
	a.Do("SUBSCRIBE", "ch")
	a.Do("PSUBSCRIBE", "c*")
	b.Do("SUBSCRIBE", "ch")
	if a.Class() != config.ClassPubSub {
		t.Fatalf("a subscribed client's class is %d", a.Class())
	}
	if got := a.Do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET answered %q", got)
	}
	if a.Class() != config.ClassNormal {
		t.Errorf("class after RESET is %d, want normal", a.Class())
	}
	if got := a.Do("ECHO", "x"); got != bulk("x") {
		t.Errorf("after RESET, ECHO answered %q", got)
	}
	if got := p.Do("PUBLISH", "ch", "m"); got != ":1\r\n" {
		t.Errorf("after RESET, PUBLISH reached %q", got)
	}
	b.Hangup()
	if got := p.Do("PUBLISH", "ch", "m"); got != ":0\r\n" {
		t.Errorf("after the subscriber closed, PUBLISH reached %q", got)
	}
	if got := p.Do("PUBSUB", "CHANNELS"); got != "*0\r\n" {
		t.Errorf("channels left: %q", got)
	}
	if a.Mailed() != "" || p.Mailed() != "" {
		t.Error("a message reached a client that no longer listens")
	}
}

// TestClientListShowsSubscriptions: CLIENT LIST and CLIENT INFO carry each
// client's sub= and psub= where Redis puts them.
func TestClientListShowsSubscriptions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	a, p := dial(t, s, "a:1"), dial(t, s, "p:1")
	a.Do("SUBSCRIBE", "x", "y")
	a.Do("PSUBSCRIBE", "z*")
	list := p.Do("CLIENT", "LIST")
	for _, want := range []string{"addr=a:1 ", " db=0 sub=2 psub=1 ssub=0 multi=-1 ", "addr=p:1 "} {
		if !strings.Contains(list, want) {
			t.Errorf("CLIENT LIST lacks %q:\n%s", want, list)
		}
	}
	if info := p.Do("CLIENT", "INFO"); !strings.Contains(info, " db=0 sub=0 psub=0 ssub=0 multi=-1 ") {
		t.Errorf("CLIENT INFO of a client that listens to nothing: %s", info)
	}
	if got := p.Do("CLIENT", "KILL", "TYPE", "pubsub"); got != ":1\r\n" {
		t.Errorf("CLIENT KILL TYPE pubsub killed %q, want the one subscriber", got)
	}
}

// TestPublishThroughTheServer: what else publishes (the native twins)
// reaches subscribers through the table's publisher, and a client with
// no connection cannot subscribe.
func TestPublishThroughTheServer(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	a := dial(t, s, "a:1")
	a.Do("PSUBSCRIBE", "b_*")
	if n := s.Publish("b_7", []byte("blocked:")); n != 1 {
		t.Fatalf("Publish reached %d, want 1", n)
	}
	if got, want := a.Mailed(), "*4\r\n"+bulk("pmessage")+bulk("b_*")+bulk("b_7")+bulk("blocked:"); got != want {
		t.Errorf("pushed %q, want %q", got, want)
	}
	lc := s.NewLocalClient()
	if got := string(lc.DoString("SUBSCRIBE", "x")); got != "-ERR a client with no connection cannot subscribe\r\n" {
		t.Errorf("a LocalClient's SUBSCRIBE answered %q", got)
	}
}
