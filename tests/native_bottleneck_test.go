package tests

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestBottleneckNativeMatchesLua: bottleneck 2.19.5's fifteen scripts give
// natively what their texts give on the interpreter. Two limiters get the
// same calls at the same instants: "n" by EVALSHA of the exact text (its
// native twin), "l" by EVAL of the text with a newline added (which
// limitdb does not recognise). After every call both must have answered
// the same, left the same eight keys (type, contents, expiry) and
// published the same messages on their channels b_n and b_l.
//
// A random walk per settings variant calls the scripts as bottleneck's
// RedisDatastore does, with the clock stepped between calls so that jobs
// expire, reservoirs refresh and grow, clients time out and limiters
// expire; edge rounds then feed every script what a twin must compute
// exactly or decline: odd settings, weights, arguments, key types and
// versions to migrate from.
func TestBottleneckNativeMatchesLua(t *testing.T) {
	t.Parallel()
	names := libscripts.BottleneckNames()
	slices.Sort(names) // the walk draws from names: a fixed order repeats it
	p := newBnPair(t, startServer(t), names)

	rng := rand.New(rand.NewSource(1))
	variants := [][]string{bnUnlimited(), bnEverything()}
	for range 6 {
		variants = append(variants, bnSettings(rng))
	}
	for _, settings := range variants {
		w := &bnWalk{p: p, rng: rng, settings: settings}
		w.walk(t, names, 250)
	}
	// The walk must have reached every path worth comparing: were it to
	// stop registering jobs or letting them expire, the comparison would
	// prove little.
	for _, name := range names {
		require.Positive(t, p.seen["ok:"+name], "%s never ran without an error", name)
	}
	for _, outcome := range []string{
		"register:ran", "register:refused", "check:true", "check:false",
		"submit:queued", "submit:high water", "submit:blocked",
		"capacity", "capacity-priority", "blocked",
		"expired by process_tick", "error:OVERWEIGHT", "error:UNKNOWN_CLIENT", "error:SETTINGS_KEY_NOT_FOUND",
	} {
		require.Positive(t, p.seen[outcome], "the walk never saw %s: %v", outcome, p.seen)
	}
	// The plain calls the library makes run on the twins: were they to
	// decline, the walk would compare the interpreter with itself.
	native, sent := bnNativeRuns(t, p.c)
	require.Greater(t, native, sent*9/10, "of %d EVALSHA calls in the walk, %d ran natively", sent, native)

	// A migration from before 2.14.0 touches keys not in KEYS, which a
	// script may touch only when they lie in a shard it holds: with one
	// shard they always do, as on Redis, where with many it is chance
	// (the shards' hash is seeded per process), and the ids n and l would
	// fare differently.
	oneShard := newBnPair(t, startOneShardServer(t), names)
	for _, edge := range bnEdges() {
		on := p
		if edge.oneShard {
			on = oneShard
		}
		t.Run(edge.name, func(t *testing.T) { on.edge(t, edge) })
	}

	// Last, so that all of the above is checked first: every twin is
	// registered under its text's SHA1 and ran, so the comparisons above
	// compared it with the interpreter and not the interpreter with itself.
	info := p.c.Info(ctx, "scripting").Val()
	for _, name := range names {
		require.Regexp(t, `native_bottleneck\.`+name+`:sha=`+p.sha[name]+`,runs=[1-9]`, info)
	}
}

// bnNativeRuns is how many runs INFO counts for bottleneck's twins, and
// how many EVALSHA calls the server took.
func bnNativeRuns(t testing.TB, c *redis.Client) (native, sent int) {
	t.Helper()
	for _, m := range regexp.MustCompile(`native_bottleneck\.\w+:sha=\w+,runs=(\d+)`).FindAllStringSubmatch(c.Info(ctx, "scripting").Val(), -1) {
		n, _ := strconv.Atoi(m[1])
		native += n
	}
	m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(c.Info(ctx, "commandstats").Val())
	require.NotNil(t, m, "no EVALSHA in INFO commandstats")
	sent, _ = strconv.Atoi(m[1])
	return native, sent
}

// newBnPair loads bottleneck's scripts on ts and subscribes to every
// limiter's channel.
func newBnPair(t *testing.T, ts *testServer, names []string) *bnPair {
	t.Helper()
	c := ts.client(t, 2)
	p := &bnPair{ts: ts, c: c, text: map[string]string{}, sha: map[string]string{},
		seen: map[string]int{}, hex: regexp.MustCompile(`[0-9a-f]{40}`)}
	for _, name := range names {
		p.text[name] = libscripts.Bottleneck(t, name)
		sum := sha1.Sum([]byte(p.text[name]))
		p.sha[name] = hex.EncodeToString(sum[:])
		require.Equal(t, p.sha[name], c.ScriptLoad(ctx, p.text[name]).Val(), name)
	}
	p.sub = c.PSubscribe(ctx, "b_*")
	t.Cleanup(func() { p.sub.Close() })
	_, err := p.sub.Receive(ctx) // the subscription holds before the first script publishes
	require.NoError(t, err)
	return p
}

// startOneShardServer is startServer with a keyspace of one shard.
func startOneShardServer(t *testing.T) *testServer {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	return serve(t, node.New(cfg, engine.New(clk, 1), nil), clk)
}

// bnVersion is the bottleneck whose scripts libscripts reads.
const bnVersion = "2.19.5"

// bnKeys are Scripts.allKeys(id), the KEYS of every script.
func bnKeys(id string) []string {
	keys := []string{"settings", "job_weights", "job_expirations", "job_clients",
		"client_running", "client_num_queued", "client_last_registered", "client_last_seen"}
	for i, k := range keys {
		keys[i] = "b_" + id + "_" + k
	}
	return keys
}

// bnPair is the two limiters, "n" run natively and "l" on the
// interpreter, and what the calls to them have shown so far.
type bnPair struct {
	ts         *testServer
	c          *redis.Client
	sub        *redis.PubSub     // subscribed to b_*
	text       map[string]string // script name: its text as bottleneck sends it
	sha        map[string]string // script name: SHA1 of its text
	step       int
	seen       map[string]int // outcomes by name, for the checks after the walk
	jobsBefore int            // members of b_n_job_expirations before the last call
	jobs       int            // and after it
	hex        *regexp.Regexp // a SHA1, which differs between the two sides' errors
}

// now is ARGV[1] as bottleneck sends it, Date.now(): the server's clock,
// on which PEXPIRE counts, in ms.
func (p *bnPair) now() string {
	return strconv.FormatInt(p.ts.clk.Now()/int64(time.Millisecond), 10)
}

// run calls script on both limiters with argv, in which "{now}" stands
// for the clock and "{id}" for each limiter's id, and requires the same
// reply or error, then the same keys and the same messages. It returns
// the reply and the error's text ("" for none). The calls, the reads of
// the keys after them and the markers that close the messages go in one
// round trip.
func (p *bnPair) run(t testing.TB, script string, argv ...string) (any, string) {
	t.Helper()
	p.step++
	where := fmt.Sprintf("step %d: %s %q", p.step, script, p.args(argv, "n"))
	mark := "mark:" + strconv.Itoa(p.step)
	pipe := p.c.Pipeline()
	jobs := pipe.ZCard(ctx, "b_n_job_expirations")
	n := pipe.EvalSha(ctx, p.sha[script], bnKeys("n"), p.args(argv, "n")...)
	l := pipe.Eval(ctx, p.text[script]+"\n", bnKeys("l"), p.args(argv, "l")...)
	reads := bnReads(pipe)
	pipe.Publish(ctx, "b_n", mark)
	pipe.Publish(ctx, "b_l", mark)
	_, _ = pipe.Exec(ctx) // each command's error is its own to check
	p.jobsBefore = int(jobs.Val())
	native, nerr := n.Result()
	lua, lerr := l.Result()
	if p.errText(nerr, "n") != p.errText(lerr, "l") || !reflect.DeepEqual(native, lua) {
		t.Fatalf("%s:\nnative:      %#v, error %v\ninterpreter: %#v, error %v", where, native, nerr, lua, lerr)
	}
	p.sameState(t, where, reads)
	p.sameMessages(t, where, mark)
	return native, p.errText(nerr, "n")
}

// args are argv as limiter id gets them.
func (p *bnPair) args(argv []string, id string) []any {
	out := make([]any, len(argv))
	for i, a := range argv {
		switch a {
		case "{now}":
			out[i] = p.now()
		case "{id}":
			out[i] = id
		default:
			out[i] = a
		}
	}
	return out
}

// errText is an error of limiter id as both sides must give it: without
// the SHA1 of the text that ran, which is not the same text, nor where it
// ran, and with the limiter's id taken out of the keys it names.
func (p *bnPair) errText(err error, id string) string {
	if err == nil || err == redis.Nil { // a nil reply: the reply says so
		return ""
	}
	text := p.hex.ReplaceAllString(strings.Split(err.Error(), " script: ")[0], "<sha>")
	return strings.ReplaceAll(text, "'b_"+id+"_", "'b_<id>_")
}

// bnReads read both limiters' eight keys: for each key its type, PTTL,
// and its contents as each type would be read.
func bnReads(pipe redis.Pipeliner) map[string][]*redis.Cmd {
	reads := map[string][]*redis.Cmd{}
	for _, id := range []string{"n", "l"} {
		for _, k := range bnKeys(id) {
			reads[k] = []*redis.Cmd{pipe.Do(ctx, "type", k), pipe.Do(ctx, "pttl", k),
				pipe.Do(ctx, "hgetall", k), pipe.Do(ctx, "zrange", k, 0, -1, "withscores"), pipe.Do(ctx, "get", k)}
		}
	}
	return reads
}

// sameState requires the same eight keys on both limiters, read at one
// instant: type, contents and PTTL. Of each key's reads only its type's
// is used; the others fail with WRONGTYPE.
func (p *bnPair) sameState(t testing.TB, where string, reads map[string][]*redis.Cmd) {
	t.Helper()
	state := func(id string) []string {
		var lines []string
		for _, k := range bnKeys(id) {
			r := reads[k]
			typ := fmt.Sprint(r[0].Val())
			line := fmt.Sprintf("%s %s pttl=%v", strings.TrimPrefix(k, "b_"+id+"_"), typ, r[1].Val())
			switch typ {
			case "hash":
				flat, _ := r[2].Val().([]any)
				var fields []string
				for i := 0; i+1 < len(flat); i += 2 {
					if v, ok := flat[i+1].(string); ok && flat[i] == "id" && strings.HasPrefix(v, id) { // each limiter keeps its own id
						flat[i+1] = "<id>" + v[len(id):]
					}
					fields = append(fields, fmt.Sprintf("%v=%v", flat[i], flat[i+1]))
				}
				slices.Sort(fields)
				line += " " + strings.Join(fields, " ")
			case "zset":
				line += fmt.Sprintf(" %v", r[3].Val())
				if id == "n" && strings.HasSuffix(k, "_job_expirations") {
					p.jobs = len(r[3].Val().([]any)) / 2
				}
			case "string":
				line += fmt.Sprintf(" %q", r[4].Val())
			}
			lines = append(lines, line)
		}
		return lines
	}
	p.jobs = 0
	if n, l := state("n"), state("l"); !slices.Equal(n, l) {
		t.Fatalf("%s: the keys differ\nnative:      %q\ninterpreter: %q", where, n, l)
	}
}

// sameMessages requires the same messages published by the last call on
// both limiters' channels: b_<id>, or whatever channel the id in a
// limiter's settings names. mark, published on b_n and b_l after the
// call, closes what the call published, as delivery is asynchronous.
func (p *bnPair) sameMessages(t testing.TB, where, mark string) {
	t.Helper()
	got := p.messages(t, where, mark)
	if !slices.Equal(got["n"], got["l"]) || len(got["other"]) > 0 {
		t.Fatalf("%s: the messages differ\nnative:      %q\ninterpreter: %q\nelsewhere:   %q",
			where, got["n"], got["l"], got["other"])
	}
	for _, m := range got["n"] {
		if rest, ok := strings.CutPrefix(m, "b_<id> "); ok {
			p.seen[strings.Split(rest, ":")[0]]++
		}
	}
}

// messages reads the subscription up to mark on b_n and b_l: by limiter
// ("n", "l" or "other" for a channel of neither), each message after its
// channel with the limiter's id taken out of it.
func (p *bnPair) messages(t testing.TB, where, mark string) map[string][]string {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := map[string][]string{}
	for marks := 0; marks < 2; {
		m, err := p.sub.ReceiveMessage(rctx)
		require.NoError(t, err, "%s: waiting for the messages", where)
		if m.Payload == mark {
			marks++
			continue
		}
		side := "other"
		for _, id := range []string{"n", "l"} {
			if rest, ok := strings.CutPrefix(m.Channel, "b_"+id); ok {
				side, m.Channel = id, "b_<id>"+rest
			}
		}
		got[side] = append(got[side], m.Channel+" "+m.Payload)
	}
	return got
}

// drain reads and drops what the subscription holds: what a call that
// failed its comparison published, which the next must not find.
func (p *bnPair) drain(t testing.TB) {
	t.Helper()
	p.step++
	mark := "mark:" + strconv.Itoa(p.step)
	for _, id := range []string{"n", "l"} {
		require.NoError(t, p.c.Publish(ctx, "b_"+id, mark).Err())
	}
	p.messages(t, "draining", mark)
}

// bnWalk is a random walk over one settings variant.
type bnWalk struct {
	p        *bnPair
	rng      *rand.Rand
	settings []string // init's settings, as RedisDatastore.prepareInitSettings makes them
	jobs     []string // indexes registered so far
	next     int      // the next job index
}

// bnClients are the walk's clients: c4 is registered only once a call
// finds it unknown, as bottleneck registers a client that has been
// forgotten.
func bnClients() []string { return []string{"c1", "c2", "c3", "c4"} }

// walk makes a fresh limiter with w.settings, registers three clients and
// makes steps calls, each a random script with realistic arguments.
func (w *bnWalk) walk(t *testing.T, names []string, steps int) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("in the walk over the settings %q", w.settings)
		}
	}()
	w.call(t, "init", "c1", append([]string{"1", bnVersion}, w.settings...), 0)
	for _, client := range bnClients()[:3] {
		w.call(t, "register_client", client, []string{"0"}, 0)
	}
	weights := map[string]int{"submit": 14, "register": 18, "free": 8, "check": 8, "heartbeat": 5,
		"running": 3, "queued": 3, "done": 3, "current_reservoir": 3, "increment_reservoir": 4,
		"update_settings": 3, "register_client": 2, "blacklist_client": 2, "group_check": 2, "init": 2}
	var deck []string
	for _, name := range names {
		for range weights[name] {
			deck = append(deck, name)
		}
	}
	for range steps {
		w.advance()
		client := bnClients()[w.rng.Intn(3)]
		if w.rng.Intn(12) == 0 {
			client = "c4"
		}
		script := deck[w.rng.Intn(len(deck))]
		w.call(t, script, client, w.argsFor(script), 0)
	}
}

// advance steps the clock: mostly a little, sometimes seconds, now and
// then past every clientTimeout the variants set, so that every client
// goes quiet.
func (w *bnWalk) advance() {
	ms := w.rng.Intn(200)
	switch r := w.rng.Intn(20); {
	case r == 0:
		ms = 7000 + w.rng.Intn(3000)
	case r < 8:
		ms = w.rng.Intn(3000)
	}
	w.p.ts.clk.Advance(time.Duration(ms) * time.Millisecond)
}

// call runs script as RedisDatastore.runScript does: when the limiter's
// settings are gone (its group expired) it is made again with init, when
// the client is unknown it registers, and the script runs once more.
// Other errors the walk must not cause, but for OVERWEIGHT and
// increment_reservoir's HINCRBY of a null reservoir, which fails on Redis
// as well.
func (w *bnWalk) call(t *testing.T, script, client string, args []string, depth int) {
	t.Helper()
	p := w.p
	reply, err := p.run(t, script, append([]string{"{now}", client}, args...)...)
	w.tally(script, reply, err)
	if err == "" && script != "init" && script != "free" && p.jobs < p.jobsBefore {
		p.seen["expired by process_tick"]++
	}
	// redis.error_reply('X') answers "ERR X" (Redis 7 adds the code).
	code := strings.TrimPrefix(err, "ERR ")
	switch {
	case err == "" || strings.HasPrefix(code, "OVERWEIGHT:"):
	case err == "ERR hash value is not an integer" && script == "increment_reservoir":
	case code == "SETTINGS_KEY_NOT_FOUND" && script != "heartbeat" && depth < 2:
		w.call(t, "init", client, append([]string{"0", bnVersion}, w.settings...), depth+1)
		w.call(t, script, client, args, depth+1)
	case code == "UNKNOWN_CLIENT" && depth < 2:
		w.call(t, "register_client", client, []string{strconv.Itoa(w.rng.Intn(3))}, depth+1)
		w.call(t, script, client, args, depth+1)
	case code == "SETTINGS_KEY_NOT_FOUND" && script == "heartbeat":
	default:
		t.Fatalf("step %d: %s %q as %s: unexpected error %q", p.step, script, args, client, err)
	}
}

// tally counts what a call answered, for the checks after the walk.
func (w *bnWalk) tally(script string, reply any, err string) {
	seen := w.p.seen
	if err != "" {
		seen["error:"+strings.Split(strings.TrimPrefix(err, "ERR "), ":")[0]]++
		return
	}
	seen["ok:"+script]++
	switch script {
	case "register":
		if r, _ := reply.([]any); len(r) > 0 && r[0] == int64(1) {
			seen["register:ran"]++
		} else {
			seen["register:refused"]++
		}
	case "check":
		seen[fmt.Sprintf("check:%t", reply == int64(1))]++
	case "submit": // {reachedHWM, blocked, strategy}
		r, _ := reply.([]any)
		switch {
		case len(r) > 1 && r[1] == int64(1):
			seen["submit:blocked"]++
		case len(r) > 0 && r[0] == int64(1):
			seen["submit:high water"]++
		default:
			seen["submit:queued"]++
		}
	}
}

// argsFor are a script's arguments after now and the client, as
// RedisDatastore makes them.
func (w *bnWalk) argsFor(script string) []string {
	rng := w.rng
	weight := strconv.Itoa(1 + rng.Intn(3))
	switch script {
	case "init":
		wipe := "0" // clear: delete the limiter's keys first
		if rng.Intn(5) == 0 {
			wipe = "1"
		}
		return append([]string{wipe, bnVersion}, w.settings...)
	case "register_client": // the instance's queued jobs
		return []string{strconv.Itoa(rng.Intn(4))}
	case "blacklist_client":
		return []string{bnClients()[rng.Intn(4)]}
	case "update_settings":
		return bnUpdate(rng)
	case "check":
		return []string{weight}
	case "submit": // queueLength, weight
		return []string{strconv.Itoa(rng.Intn(7)), weight}
	case "register": // index, weight, expiration
		w.next++
		index := strconv.Itoa(w.next)
		w.jobs = append(w.jobs, index)
		expiration := ""
		if rng.Intn(3) > 0 {
			expiration = strconv.Itoa(100 + rng.Intn(4900))
		}
		return []string{index, weight, expiration}
	case "free":
		if len(w.jobs) == 0 || rng.Intn(8) == 0 {
			return []string{strconv.Itoa(w.next + 1000)} // never registered
		}
		return []string{w.jobs[rng.Intn(len(w.jobs))]}
	case "increment_reservoir":
		return []string{strconv.Itoa(rng.Intn(8) - 2)}
	}
	return nil
}

// bnMaybe is "" (null, as prepareObject sends it) one time in three, else
// a number in [lo, hi].
func bnMaybe(rng *rand.Rand, lo, hi int) string {
	if rng.Intn(3) == 0 {
		return ""
	}
	return strconv.Itoa(lo + rng.Intn(hi-lo+1))
}

// bnSettings are a random limiter's settings in prepareInitSettings's
// order: Bottleneck's storeDefaults, then id ("{id}"), version,
// groupTimeout (the datastore's timeout) and clientTimeout. Strategies
// are LEAK 1, OVERFLOW 2, BLOCK 3, OVERFLOW_PRIORITY 4.
func bnSettings(rng *rand.Rand) []string {
	minTime := "0"
	if rng.Intn(2) == 0 {
		minTime = strconv.Itoa(rng.Intn(201))
	}
	refresh, increase := []string{"", ""}, []string{"", "", ""}
	if rng.Intn(2) == 0 {
		refresh = []string{bnMaybe(rng, 1000, 5000), strconv.Itoa(rng.Intn(11))}
	}
	if rng.Intn(2) == 0 {
		increase = []string{strconv.Itoa(500 + rng.Intn(2500)), bnMaybe(rng, 1, 3), bnMaybe(rng, 5, 15)}
	}
	return []string{
		"maxConcurrent", bnMaybe(rng, 1, 5),
		"minTime", minTime,
		"highWater", bnMaybe(rng, 1, 5),
		"strategy", strconv.Itoa(1 + rng.Intn(4)),
		"penalty", bnMaybe(rng, 100, 3000),
		"reservoir", bnMaybe(rng, 0, 10),
		"reservoirRefreshInterval", refresh[0],
		"reservoirRefreshAmount", refresh[1],
		"reservoirIncreaseInterval", increase[0],
		"reservoirIncreaseAmount", increase[1],
		"reservoirIncreaseMaximum", increase[2],
		"id", "{id}",
		"version", bnVersion,
		"groupTimeout", bnMaybe(rng, 4000, 20000),
		"clientTimeout", strconv.Itoa(2000 + rng.Intn(4001)),
	}
}

// bnUnlimited are Bottleneck's defaults: nothing limits.
func bnUnlimited() []string {
	return []string{"maxConcurrent", "", "minTime", "0", "highWater", "", "strategy", "1", "penalty", "",
		"reservoir", "", "reservoirRefreshInterval", "", "reservoirRefreshAmount", "",
		"reservoirIncreaseInterval", "", "reservoirIncreaseAmount", "", "reservoirIncreaseMaximum", "",
		"id", "{id}", "version", bnVersion, "groupTimeout", "", "clientTimeout", "3000"}
}

// bnEverything sets every setting, with BLOCK, so that every branch of
// process_tick and submit has a number to work on.
func bnEverything() []string {
	return []string{"maxConcurrent", "3", "minTime", "20", "highWater", "2", "strategy", "3", "penalty", "",
		"reservoir", "5", "reservoirRefreshInterval", "4000", "reservoirRefreshAmount", "6",
		"reservoirIncreaseInterval", "700", "reservoirIncreaseAmount", "1", "reservoirIncreaseMaximum", "8",
		"id", "{id}", "version", bnVersion, "groupTimeout", "15000", "clientTimeout", "5000"}
}

// bnUpdate are update_settings' arguments: one to three settings, as
// Bottleneck.updateSettings sends what it is given.
func bnUpdate(rng *rand.Rand) []string {
	choices := []func() []string{
		func() []string { return []string{"maxConcurrent", bnMaybe(rng, 1, 5)} },
		func() []string { return []string{"reservoir", bnMaybe(rng, 0, 10)} },
		func() []string { return []string{"minTime", strconv.Itoa(rng.Intn(201))} },
		func() []string { return []string{"highWater", bnMaybe(rng, 1, 5)} },
		func() []string { return []string{"strategy", strconv.Itoa(1 + rng.Intn(4))} },
		func() []string { return []string{"penalty", bnMaybe(rng, 100, 3000)} },
		func() []string {
			return []string{"reservoirRefreshInterval", bnMaybe(rng, 1000, 5000), "reservoirRefreshAmount", bnMaybe(rng, 0, 10)}
		},
		func() []string {
			return []string{"reservoirIncreaseInterval", bnMaybe(rng, 500, 3000), "reservoirIncreaseAmount", bnMaybe(rng, 1, 3)}
		},
	}
	var args []string
	for range 1 + rng.Intn(3) {
		args = append(args, choices[rng.Intn(len(choices))]()...)
	}
	return args
}

// bnEdge is a state or a call that a twin must compute exactly or
// decline to, leaving it to the interpreter.
type bnEdge struct {
	name     string
	prep     [][]string // commands on both limiters' keys after the reset ("{id}" in them)
	calls    [][]string // calls before every script runs twice: script, now, client, args
	oneShard bool       // run on the server of one shard
}

// bnEdges are the edge rounds. After each one's commands and calls,
// every script runs twice, 1.5 s apart, so that each reads the odd state
// or what the odd call left, and the job that expires in the second pass
// is processed with it.
func bnEdges() []bnEdge {
	edges := []bnEdge{{name: "settings deleted", prep: [][]string{{"del", "b_{id}_settings"}}},
		{name: "settings without an id", prep: [][]string{{"hdel", "b_{id}_settings", "id"}}},
		{name: "an id that names another channel", prep: [][]string{{"hset", "b_{id}_settings", "id", "{id}.2"}}}}
	for _, field := range []string{"maxConcurrent", "running", "reservoir",
		"reservoirRefreshInterval", "reservoirRefreshAmount", "lastReservoirRefresh",
		"reservoirIncreaseInterval", "reservoirIncreaseAmount", "reservoirIncreaseMaximum", "lastReservoirIncrease",
		"capacityPriorityCounter", "clientTimeout", "nextRequest", "minTime", "highWater", "strategy",
		"unblockTime", "penalty", "groupTimeout", "done"} {
		for _, v := range []string{"abc", "1.5", "0x10", " 7", "", "1e3", "1.5e3", "-2", "inf"} {
			edges = append(edges, bnEdge{name: fmt.Sprintf("settings %s=%q", field, v),
				prep: [][]string{{"hset", "b_{id}_settings", field, v}}})
		}
	}
	for _, v := range []string{"x", "1.5", "", "-1", "1e2"} { // job 1 expires in the second pass
		edges = append(edges, bnEdge{name: fmt.Sprintf("job weight %q", v),
			prep: [][]string{{"hset", "b_{id}_job_weights", "1", v}}})
	}
	edges = append(edges, bnEdge{name: "job without a client", prep: [][]string{{"hdel", "b_{id}_job_clients", "1"}}})
	for _, v := range []string{"abc", "1.5", ""} {
		edges = append(edges, bnEdge{name: fmt.Sprintf("client queued %q", v),
			prep: [][]string{{"hset", "b_{id}_client_num_queued", "c1", v}}})
	}
	for _, k := range bnKeys("{id}") {
		edges = append(edges, bnEdge{name: "string at " + strings.TrimPrefix(k, "b_{id}_"),
			prep: [][]string{{"del", k}, {"set", k, "x"}}})
	}
	for _, v := range []string{"abc", "1.5", "", "0x10", " 7", "1e3", "-5"} {
		edges = append(edges, bnEdge{name: fmt.Sprintf("now %q", v), calls: bnEveryScript(v, "90")})
	}
	edges = append(edges, bnEdge{name: "odd arguments", calls: bnOddCalls()})
	// init migrates a hash of an older version step by step: each
	// version's hash lacks the fields later versions added, and before
	// 2.14.0 jobs lived in b_<id>_running and b_<id>_executing, keys
	// not in KEYS that init renames.
	since := map[string][]string{
		"2.10.0": {"reservoirRefreshInterval", "reservoirRefreshAmount", "lastReservoirRefresh", "done"},
		"2.15.2": {"capacityPriorityCounter"},
		"2.17.0": {"clientTimeout"},
		"2.18.0": {"reservoirIncreaseInterval", "reservoirIncreaseAmount", "reservoirIncreaseMaximum", "lastReservoirIncrease"},
	}
	oldKeys := [][]string{{"rename", "b_{id}_job_weights", "b_{id}_running"}, {"rename", "b_{id}_job_expirations", "b_{id}_executing"}}
	for _, m := range []struct {
		version string
		lacks   []string // versions whose fields the hash lacks
		prep    [][]string
	}{
		{"2.9.0", []string{"2.10.0", "2.15.2", "2.17.0", "2.18.0"}, oldKeys},
		{"2.10.4", []string{"2.15.2", "2.17.0", "2.18.0"}, append([][]string{{"hset", "b_{id}_settings", "lastReservoirRefresh", ""}}, oldKeys...)},
		{"2.11.0", []string{"2.15.2", "2.17.0", "2.18.0"}, append([][]string{{"hset", "b_{id}_settings", "lastReservoirRefresh", ""}}, oldKeys...)},
		{"2.13.2", []string{"2.15.2", "2.17.0", "2.18.0"}, oldKeys},
		{"2.15.1", []string{"2.15.2", "2.17.0", "2.18.0"}, nil},
		{"2.16.0", []string{"2.17.0", "2.18.0"}, nil},
		{"2.17.3", []string{"2.18.0"}, nil},
		{"2.18.9", nil, nil},
		{"2.19.5", nil, nil},
		{"1.0", []string{"2.10.0", "2.15.2", "2.17.0", "2.18.0"}, oldKeys},
		{"abc", nil, nil},
		{"", nil, nil},
	} {
		prep := [][]string{{"hset", "b_{id}_settings", "version", m.version}}
		for _, v := range m.lacks {
			prep = append(prep, append([]string{"hdel", "b_{id}_settings"}, since[v]...))
		}
		edges = append(edges, bnEdge{name: fmt.Sprintf("init from version %q", m.version),
			prep:     append(prep, m.prep...),
			calls:    [][]string{{"init", "{now}", "c1", "0", bnVersion}},
			oneShard: true})
	}
	edges = append(edges, bnEdge{name: "init without a version", prep: [][]string{{"hdel", "b_{id}_settings", "version"}},
		calls: [][]string{{"init", "{now}", "c1", "0", bnVersion}}})
	return edges
}

// bnEveryScript calls each script once as c1 at now with ordinary
// arguments (jobs index, index+1), init last so that the others see the
// state before it mends it.
func bnEveryScript(now, index string) [][]string {
	next := index + "1"
	calls := [][]string{
		{"group_check"}, {"register_client", "1"}, {"heartbeat"}, {"running"}, {"queued"}, {"done"},
		{"check", "1"}, {"submit", "1", "1"}, {"register", index, "1", "500"}, {"register", next, "1", ""},
		{"free", "2"}, {"current_reservoir"}, {"increment_reservoir", "1"},
		{"update_settings", "minTime", "5"}, {"blacklist_client", "c2"},
		append([]string{"init", "0", bnVersion}, bnEverything()...),
	}
	for i, c := range calls {
		calls[i] = append([]string{c[0], now, "c1"}, c[1:]...)
	}
	return calls
}

// bnOddCalls are calls with arguments bottleneck does not send: numbers
// that are no numbers, or not integers, or missing.
func bnOddCalls() [][]string {
	var calls [][]string
	for _, v := range []string{"1.5", "", "x", "0", "-1", "0x10"} {
		calls = append(calls,
			[]string{"check", "{now}", "c1", v},
			[]string{"submit", "{now}", "c1", "1", v},
			[]string{"submit", "{now}", "c1", v, "1"},
			[]string{"register", "{now}", "c1", "50", v, "500"},
			[]string{"register", "{now}", "c1", "51", "1", v},
			[]string{"increment_reservoir", "{now}", "c1", v},
			[]string{"register_client", "{now}", "c3", v},
			[]string{"update_settings", "{now}", "c1", "reservoir", v},
		)
	}
	return append(calls,
		[]string{"register", "{now}", "c1", "", "1", "500"},
		[]string{"free", "{now}", "c1", ""},
		[]string{"free", "{now}", "c1"},
		[]string{"check", "{now}", "c1"},
		[]string{"submit", "{now}", "c1"},
		[]string{"register", "{now}", "c1"},
		[]string{"increment_reservoir", "{now}", "c1"},
		[]string{"update_settings", "{now}", "c1"},
		[]string{"update_settings", "{now}", "c1", "maxConcurrent"},
		[]string{"blacklist_client", "{now}", "c1"},
		[]string{"register_client", "{now}", "c3"},
		[]string{"init", "{now}", "c1", "x", bnVersion, "maxConcurrent", "1"},
		[]string{"init", "{now}", "c1", "0"},
		[]string{"init", "{now}", "c1", "1", bnVersion, "maxConcurrent"},
		[]string{"heartbeat", "{now}"},
	)
}

// edge makes both limiters the same again (init clearing the keys, two
// clients, a queued job, job 1 of weight 1 expiring in 1 s and job 2 of
// weight 2 never), applies the edge's commands to both, makes its calls
// and runs every script twice.
func (p *bnPair) edge(t *testing.T, e bnEdge) {
	p.drain(t)
	for _, id := range []string{"n", "l"} {
		require.NoError(t, p.c.Del(ctx, "b_"+id+"_running", "b_"+id+"_executing").Err())
	}
	reset := [][]string{
		append([]string{"init", "{now}", "c1", "1", bnVersion}, bnEverything()...),
		{"register_client", "{now}", "c1", "1"}, {"register_client", "{now}", "c2", "0"},
		{"submit", "{now}", "c1", "0", "1"},
		{"register", "{now}", "c1", "1", "1", "1000"}, {"register", "{now}", "c2", "2", "2", ""},
	}
	for _, call := range reset {
		p.run(t, call[0], call[1:]...)
	}
	p.ts.clk.Advance(10 * time.Millisecond)
	for _, cmd := range e.prep {
		for _, id := range []string{"n", "l"} {
			args := make([]any, len(cmd))
			for i, a := range cmd {
				args[i] = strings.ReplaceAll(a, "{id}", id)
			}
			require.NoError(t, p.c.Do(ctx, args...).Err(), "%q", args)
		}
	}
	for _, call := range e.calls {
		p.run(t, call[0], call[1:]...)
	}
	for pass, index := range []string{"10", "20"} {
		if pass > 0 {
			p.ts.clk.Advance(1500 * time.Millisecond)
		}
		for _, call := range bnEveryScript("{now}", index) {
			p.run(t, call[0], call[1:]...)
		}
	}
}
