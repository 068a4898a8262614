package twins

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// fakeHost is a Host with no server: a keyspace on a fake clock, and the
// messages published, as "channel message".
type fakeHost struct {
	clk       *clock.Fake
	eng       *engine.Engine
	published []string
}

func newFakeHost() *fakeHost {
	clk := clock.NewFake(1_700_000_000e9)
	return &fakeHost{clk: clk, eng: engine.New(clk, 0)}
}

func (h *fakeHost) Now() int64             { return h.clk.Now() }
func (h *fakeHost) Engine() *engine.Engine { return h.eng }
func (h *fakeHost) Exclusive(keys [][]byte, fn func(tx *engine.Engine)) {
	h.eng.Exclusive(keys, false, fn)
}
func (h *fakeHost) Publish(channel string, message []byte) {
	h.published = append(h.published, channel+" "+string(message))
}

func bytesOf(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}

// TestRegistry: New knows every twin once, by a SHA1's lowercase hex, in
// SHA1 order; each registry is a value of its own, whose twins count only
// their own runs.
func TestRegistry(t *testing.T) {
	t.Parallel()
	r, other := New(), New()
	hex := regexp.MustCompile("^[0-9a-f]{40}$")
	names := map[string]bool{}
	last := ""
	r.Each(func(sha string, tw *Twin) {
		if !hex.MatchString(sha) || sha <= last {
			t.Errorf("%q after %q: not a SHA1 in order", sha, last)
		}
		if names[tw.Name] || r.Get(sha) != tw || other.Get(sha) == tw {
			t.Errorf("%s: a name twice, or a twin Get does not find, or one two registries share", tw.Name)
		}
		if tw.Loops != strings.HasPrefix(tw.Name, "bottleneck.") {
			t.Errorf("%s: Loops %v", tw.Name, tw.Loops)
		}
		last, names[tw.Name] = sha, true
	})
	if len(names) != 25 {
		t.Errorf("%d twins, want 25", len(names))
	}
	if r.Get("f74233f556d3f99c50b61169cf8aa8d5deb63fb2").Name != "ulule.incr" || r.Get(strings.Repeat("0", 40)) != nil {
		t.Error("Get finds the wrong twin")
	}
	h, w := newFakeHost(), resp.NewWriter(nil)
	incr := r.Get("f74233f556d3f99c50b61169cf8aa8d5deb63fb2")
	if !incr.Run(h, w, bytesOf("k"), bytesOf("1", "60000")) || incr.Runs() != 1 || other.Get("f74233f556d3f99c50b61169cf8aa8d5deb63fb2").Runs() != 0 {
		t.Error("a run is not counted by its own registry alone")
	}
}

// TestTwinsRunOnAHost: the twins need nothing of a server but Host. Each
// step runs one twin at the fake clock's instant and wants its reply, the
// key's value left behind and the messages published; a twin that declines
// writes no reply and changes nothing.
func TestTwinsRunOnAHost(t *testing.T) {
	t.Parallel()
	h, w := newFakeHost(), resp.NewWriter(nil)
	r := New()
	bnKeys := []string{"b_a_settings", "b_a_job_weights", "b_a_job_expirations", "b_a_job_clients", "b_a_client_running",
		"b_a_client_num_queued", "b_a_client_last_registered", "b_a_client_last_seen"}
	now := "1700000000000"
	for i, st := range []struct {
		sha       string
		keys      []string
		argv      []string
		advance   time.Duration
		declined  bool
		reply     string
		value     string // GET of keys[0] after, when not ""
		published string
	}{
		{sha: "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", keys: []string{"u"}, argv: []string{"1", "60000"}, reply: "*2\r\n:1\r\n:60000\r\n", value: "1"},
		{sha: "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", keys: []string{"u"}, argv: []string{"2", "60000"}, advance: 1500 * time.Millisecond,
			reply: "*2\r\n:3\r\n:58500\r\n", value: "3"},
		{sha: "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", keys: []string{"u"}, argv: []string{"abc", "60000"}, declined: true, value: "3"},
		// INCRBY's INT64_MAX reaches the reply through a Lua number, 2^63,
		// which Redis answers as INT64_MIN.
		{sha: "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", keys: []string{"big"}, argv: []string{"9223372036854775807", "60000"},
			reply: "*2\r\n:-9223372036854775808\r\n:60000\r\n", value: "9223372036854775807"},
		{sha: "f74233f556d3f99c50b61169cf8aa8d5deb63fb2", keys: []string{"b53"}, argv: []string{"9007199254740993", "0"},
			reply: "*2\r\n:9007199254740992\r\n:0\r\n", value: "9007199254740993"},
		{sha: "566f5c6a17e5fddb9a10bf389f754edd0d899c61", keys: []string{"u"}, reply: "*2\r\n:3\r\n:58500\r\n"},
		// tonumber("-0") is -0, which redis.call writes "-0" and INCRBY
		// refuses: the interpreter answers Redis's error.
		{sha: "628bd136a573a06b346879695681af12ccef300f", keys: []string{"z"}, argv: []string{"60", "-0"}, declined: true},
		{sha: "ebd682e30de074a6919bde872b507734c7c3ebe5", keys: []string{"t"}, argv: []string{"5", "7", "60"}, reply: "-key does not exist\r\n"},
		{sha: "ebd682e30de074a6919bde872b507734c7c3ebe5", keys: []string{"u"}, argv: []string{"3", "7", "60"}, reply: ":1\r\n", value: "7"},
		{sha: "9681e2eb0f886df26fa948812dbd55b6263256c4", keys: bnKeys,
			argv: []string{now, "c1", "1", "2.19.5", "id", "a", "version", "2.19.5", "minTime", "0", "clientTimeout", "10000"}, reply: "*0\r\n"},
		{sha: "bf0099497e081e19f6e6f1a4e90d6d502e2230a7", keys: bnKeys, argv: []string{now, "c1", "0"}, reply: "*0\r\n"},
		{sha: "8bd3e064b718321194a8df49c69e48fd0ffb4dcd", keys: bnKeys, argv: []string{now, "c1"}, reply: "$-1\r\n", published: "b_a capacity:"},
		{sha: "8bd3e064b718321194a8df49c69e48fd0ffb4dcd", keys: bnKeys[:7], argv: []string{now, "c1"}, declined: true},
	} {
		h.clk.Advance(st.advance)
		h.published = nil
		w.Reset()
		tw := r.Get(st.sha)
		ran := tw.Run(h, w, bytesOf(st.keys...), bytesOf(st.argv...))
		if ran == st.declined {
			t.Fatalf("step %d: %s %q ran: %v", i, tw.Name, st.argv, ran)
		}
		if got := string(w.Bytes()); got != st.reply {
			t.Errorf("step %d: %s %q: reply %q, want %q", i, tw.Name, st.argv, got, st.reply)
		}
		if st.value != "" {
			ent, _ := h.eng.Get([]byte(st.keys[0]), h.Now())
			if got := string(engine.AppendString(nil, ent)); got != st.value {
				t.Errorf("step %d: %s: value %q, want %q", i, tw.Name, got, st.value)
			}
		}
		if got := strings.Join(h.published, "; "); got != st.published {
			t.Errorf("step %d: %s: published %q, want %q", i, tw.Name, got, st.published)
		}
	}
}

// TestLuaNumber: an argument reads as Lua 5.1's coercion of a string
// (strtod) reads it; an infinity or a NaN declines.
func TestLuaNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"-0", math.Copysign(0, -1), true}, {"60000", 60000, true}, {"-5", -5, true},
		{"007", 7, true}, {"+1", 1, true}, {" 1 ", 1, true}, {"1.5", 1.5, true}, {"1e3", 1000, true},
		{"999999999999999", 999999999999999, true}, {"-999999999999999", -999999999999999, true},
		{"1234567890123456789", 1234567890123456789, true}, {"9223372036854775808", 9223372036854775808, true},
		{"00012", 12, true}, {"0x10", 16, true}, {"0x1p4", 16, true}, {"\v1\f", 1, true}, {"1e400", 0, false},
		{"", 0, false}, {"-", 0, false}, {"abc", 0, false}, {"inf", 0, false}, {"-inf", 0, false},
		{"nan", 0, false}, {"1_000", 0, false}, {"0b101", 0, false}, {"1-", 0, false},
	} {
		got, ok := luaNumber([]byte(tc.in))
		if ok != tc.ok || got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("luaNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
