// Command accuracy is limitdb's accuracy study: it replays the same traffic
// through every limiting algorithm (the production code, through each
// engine.Limiter) and through an exact sliding window, and reports per
// algorithm the requests wrongly admitted and wrongly denied, the worst
// over-admission in any window, and the memory per key. It draws the
// comparison as an SVG chart and rewrites the results section of
// docs/algorithms.md.
//
// Everything is seeded, so a run is reproducible to the request:
//
//	go run ./bench/accuracy                       # print the tables
//	go run ./bench/accuracy -doc docs/algorithms.md -svg docs/accuracy.svg
//
// "Wrong" is judged per decision, on the algorithm's own history: a request
// is wrongly admitted when the algorithm admitted it although the cost it
// had already admitted in the trailing window, plus this request, exceeds
// the limit (the exact sliding window would have denied it); wrongly denied
// when the algorithm denied it although it would have fitted. The sliding
// log is that exact window, so its row is zero by construction: a check of
// the harness.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	lwindow "github.com/limitdb/limitdb/engine/window"
)

const (
	sec = int64(time.Second)
	ms  = int64(time.Millisecond)
	// limit per window, for every algorithm: 100 requests per 10 s.
	limit  = 100
	window = 10 * sec
	// t0 is a whole minute, so fixed windows start at t0 + k*window.
	t0 = int64(1_767_225_600) * sec
)

// algo is one algorithm configured to "limit per window".
type algo struct {
	name string
	cmd  string // how a user asks for it
	new  func() (engine.Limiter, error)
	// delayed: admitted requests proceed after the reply's delay (LB.QUEUE),
	// so what the backend sees is measured at the time they proceed.
	delayed bool
}

var algos = []algo{
	{"exact (SL.INCR)", "SL.INCR k 100 10s", func() (engine.Limiter, error) { return engine.NewSlidingLog(limit, window) }, false},
	{"FW.INCR", "FW.INCR k 100 10s", func() (engine.Limiter, error) { return engine.NewFixedWindow(limit, window) }, false},
	{"SW.INCR", "SW.INCR k 100 10s", func() (engine.Limiter, error) { return engine.NewSlidingWindow(limit, window, 1) }, false},
	{"SW.INCR PRECISION 4", "SW.INCR k 100 10s PRECISION 4", func() (engine.Limiter, error) { return engine.NewSlidingWindow(limit, window, 4) }, false},
	{"SW.INCR PRECISION 10", "SW.INCR k 100 10s PRECISION 10", func() (engine.Limiter, error) { return engine.NewSlidingWindow(limit, window, 10) }, false},
	{"TB.TAKE", "TB.TAKE k 100 100 10s", func() (engine.Limiter, error) { return engine.NewTokenBucket(limit, limit, window) }, false},
	{"LB.QUEUE", "LB.QUEUE k 100 100 10s", func() (engine.Limiter, error) { return engine.NewLeakyQueue(limit, limit, window) }, true},
	{"CL.THROTTLE", "CL.THROTTLE k 99 100 10", func() (engine.Limiter, error) {
		l, err := gcra.CellLimit(limit-1, limit, window/sec)
		return engine.CellLimiter{L: l}, err
	}, false},
}

// request is one arrival of a source.
type request struct{ at, cost int64 }

// scenario is a named traffic trace of one source.
type scenario struct {
	name, about string
	reqs        []request
	end         int64
}

// poisson appends arrivals at rate per second over [from, to).
func poisson(rng *rand.Rand, reqs []request, from, to int64, rate float64) []request {
	for t := from; ; {
		t += int64(rng.ExpFloat64() / rate * float64(sec))
		if t >= to {
			return reqs
		}
		reqs = append(reqs, request{t, 1})
	}
}

func randomTraffic(rng *rand.Rand) scenario {
	end := t0 + 600*window
	return scenario{"random", "Poisson arrivals at 1.5x the limit's rate (15/s) for 600 windows",
		poisson(rng, nil, t0, end, 15), end}
}

// burstyTraffic is quiet background traffic with bursts, some of them
// straddling a fixed-window boundary: the pattern that doubles a fixed
// window's admissions.
func burstyTraffic(rng *rand.Rand) scenario {
	end := t0 + 60*window
	reqs := poisson(rng, nil, t0, end, 3)
	for w := int64(1); w < 60; w += 1 + rng.Int64N(4) {
		edge := t0 + w*window
		if rng.IntN(2) == 0 { // a burst across the boundary
			reqs = poisson(rng, reqs, edge-500*ms, edge+500*ms, 400)
			continue
		}
		at := edge + rng.Int64N(window) // a burst somewhere inside
		reqs = poisson(rng, reqs, at, at+time.Duration(1+rng.Int64N(3)).Nanoseconds()*sec, 80+rng.Float64()*120)
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].at < reqs[j].at })
	return scenario{"bursty", "background at 3/s plus bursts (80-200/s for 1-3 s, or 400/s across a window boundary), 60 windows", reqs, end}
}

// trailing is the cost admitted in (t-window, t], over a time-ordered list
// of admissions, with two moving pointers.
type trailing struct {
	reqs   []request
	lo, hi int
	sum    int64
}

func (w *trailing) at(t int64) int64 {
	for w.hi < len(w.reqs) && w.reqs[w.hi].at <= t {
		w.sum += w.reqs[w.hi].cost
		w.hi++
	}
	for w.lo < w.hi && w.reqs[w.lo].at <= t-window {
		w.sum -= w.reqs[w.lo].cost
		w.lo++
	}
	return w.sum
}

// result is one algorithm on one scenario.
type result struct {
	algo                  algo
	requests, admitted    int
	wrongAdmit, wrongDeny int
	worst                 int64 // most cost admitted in any window
	admissions            []request
	busiest               []byte // the largest state the key held, serialised
}

func run(a algo, reqs []request) result {
	l, err := a.new()
	if err != nil {
		log.Fatalf("%s: %v", a.name, err)
	}
	res := result{algo: a, requests: len(reqs)}
	var ent engine.Entry
	var own trailing // this algorithm's admissions, for the exact check
	busiest := 0
	for _, q := range reqs {
		if ent.Kind != engine.KindNone && ent.Expire != 0 && ent.Expire <= q.at {
			ent = engine.Entry{}
		}
		next, r, write, err := l.Apply(ent, q.at, q.cost)
		if err != nil {
			log.Fatalf("%s: %v", a.name, err)
		}
		fits := own.at(q.at)+q.cost <= limit
		if r.Limited {
			if fits {
				res.wrongDeny++
			}
		} else {
			res.admitted++
			if !fits {
				res.wrongAdmit++
			}
			own.reqs = append(own.reqs, q)
			at := q.at
			if a.delayed {
				at += r.Delay * ms // when the request proceeds
			}
			res.admissions = append(res.admissions, request{at, q.cost})
		}
		if write {
			ent = next
			if b, _ := ent.AppendBinary(nil); len(b) > busiest {
				busiest, res.busiest = len(b), b
			}
		}
	}
	w := trailing{reqs: res.admissions}
	for _, q := range res.admissions {
		res.worst = max(res.worst, w.at(q.at))
	}
	return res
}

// perKey is the memory a key holding state b (serialised) costs: b is
// stored under n keys of a fresh keyspace, which then holds, per key, its
// table's storage (Engine.MemoryBytes, outside the Go heap: key name, index
// slot, entry and the words an entry keeps, such as a sliding log's
// stamps, capacity included) and what the keys added to the Go heap (state
// beside the table, in the shard's slab). The heap's share is net of base,
// entryHeap's, and rounded to 8: heap figures vary by a few bytes between
// runs.
func perKey(b []byte, base float64) (table, heap int) {
	ent, _, err := engine.DecodeEntry(b)
	if err != nil {
		log.Fatal(err)
	}
	table, grown := storeMany(func() engine.Entry { got, _, _ := engine.DecodeEntry(b); return got }, ent.Expire-1)
	return table, 8 * int(math.Round(max(grown-base, 0)/8))
}

// entryHeap is what the Go heap grows by per key for keys whose state fits
// their entry: a small shard's arrays live on the heap, and MemoryBytes
// counts them already.
func entryHeap() float64 {
	_, grown := storeMany(func() engine.Entry {
		return engine.Entry{Kind: engine.KindFixedWindow, A: t0, B: 1, Expire: t0 + window}
	}, t0)
	return grown
}

// storeMany stores the entries next makes under 50,000 keys of a fresh
// keyspace at now, and returns its table's storage per key and what the
// Go heap grew by per key.
func storeMany(next func() engine.Entry, now int64) (table int, heap float64) {
	const n = 50000
	e := engine.New(clock.NewFake(now), 0) // every entry is stored at now
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		e.Do(fmt.Appendf(nil, "user:%06d", i), now, func(engine.Entry) (engine.Entry, bool) { return next(), true })
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytes, _ := e.MemoryBytes()
	runtime.KeepAlive(e)
	return int(math.Round(float64(bytes) / n)), (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
}

// paretoRates draws per-source request rates (per second) from a heavy
// tail: the median source sends 3.6% of the limit's rate and 1% of
// sources exceed it, capped at 3x. A stand-in for production traffic,
// where most clients never come near their limit.
func paretoRates(rng *rand.Rand, n int) []float64 {
	rates := make([]float64, n)
	limitRate := float64(limit) / float64(window/sec)
	for i := range rates {
		rates[i] = math.Min(0.02*limitRate*math.Pow(1-rng.Float64(), -1/1.2), 3*limitRate)
	}
	return rates
}

// nearRates draws rates log-uniformly from 0.1x to 3x the limit's rate:
// most traffic at or over the limit, the hard case.
func nearRates(rng *rand.Rand, n int) []float64 {
	rates := make([]float64, n)
	for i := range rates {
		rates[i] = math.Exp(rng.Float64() * math.Log(30)) // 1/s to 30/s
	}
	return rates
}

// population runs every source (its own key, 20 windows) through a and
// counts wrong decisions as the commands make them (denials not charged).
func population(seed uint64, rates []float64, a algo) (requests, wrong int) {
	rng := rand.New(rand.NewPCG(seed, 4))
	for _, rate := range rates {
		r := run(a, poisson(rng, nil, t0, t0+20*window, rate))
		requests += r.requests
		wrong += r.wrongAdmit + r.wrongDeny
	}
	return requests, wrong
}

// estimator measures as Cloudflare did: every request counts toward the
// source's rate, admitted or not, and a decision is wrong when "estimate
// over the limit" differs from "exact count over the limit". The estimate
// is the production sliding window's own (engine/window, fed every request
// under a limit it never reaches).
func estimator(seed uint64, rates []float64, precision int64) (requests, wrong int) {
	const huge = 1 << 40
	sw, err := lwindow.NewSliding(huge, window, precision)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 4))
	for _, rate := range rates {
		reqs := poisson(rng, nil, t0, t0+20*window, rate)
		st := lwindow.SlidingState{Counts: make([]int64, precision+1)}
		all := trailing{reqs: reqs}
		for _, q := range reqs {
			d, err := sw.Decide(st, q.at, q.cost)
			if err != nil || d.Limited {
				log.Fatalf("estimator: %v %+v", err, d)
			}
			st = sw.Record(st, q.at, q.cost, st.Counts)
			estimate := huge - d.Remaining // ceil(estimate), this request included
			if (estimate <= limit) != (all.at(q.at) <= limit) {
				wrong++
			}
		}
		requests += len(reqs)
	}
	return requests, wrong
}

func main() {
	docPath := flag.String("doc", "", "rewrite the results section of this markdown file")
	svgPath := flag.String("svg", "", "write the chart to this SVG file")
	seed := flag.Uint64("seed", 1, "random seed")
	sources := flag.Int("sources", 5000, "heavy-tailed sources in the population runs (a tenth as many near the limit)")
	flag.Parse()
	clk := clock.Real()
	began := clk.Mono()

	var out bytes.Buffer
	scenarios := []scenario{
		randomTraffic(rand.New(rand.NewPCG(*seed, 1))),
		burstyTraffic(rand.New(rand.NewPCG(*seed, 2))),
	}
	results := map[string][]result{}
	for _, sc := range scenarios {
		for _, a := range algos {
			results[sc.name] = append(results[sc.name], run(a, sc.reqs))
		}
	}
	fmt.Fprintf(&out, "Limit: %d requests per %s window for every algorithm (the bucket algorithms: capacity %d, refilled %d per %s). Seed %d.\n\n",
		limit, time.Duration(window), limit, limit, time.Duration(window), *seed)
	for _, sc := range scenarios {
		fmt.Fprintf(&out, "**%s traffic**: %s; %d requests.\n\n", sc.name, sc.about, len(sc.reqs))
		fmt.Fprintln(&out, "| algorithm | admitted | wrongly admitted | wrongly denied | worst window (limit 100) |")
		fmt.Fprintln(&out, "|---|---:|---:|---:|---:|")
		for _, r := range results[sc.name] {
			fmt.Fprintf(&out, "| %s | %d | %d (%.2f%%) | %d (%.2f%%) | %d (%.2fx) |\n", r.algo.name, r.admitted,
				r.wrongAdmit, pct(r.wrongAdmit, r.requests), r.wrongDeny, pct(r.wrongDeny, r.requests), r.worst, float64(r.worst)/limit)
		}
		fmt.Fprintln(&out)
	}

	fmt.Fprintln(&out, "**Memory per key**: 50,000 keys, each holding the largest state the bursty run left a key of that algorithm, in a fresh keyspace: the table's storage per key (`Engine.MemoryBytes`: key name, index slot, entry, and the words an entry keeps its sliding log's stamps in; capacity included), and what the keys added to the Go heap (state kept beside the table, in the shard's slab).")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "| algorithm | command | table | Go heap | bytes per key |")
	fmt.Fprintln(&out, "|---|---|---:|---:|---:|")
	base := entryHeap()
	for _, r := range results["bursty"] {
		table, heap := perKey(r.busiest, base)
		fmt.Fprintf(&out, "| %s | `%s` | %d | %d | ~%d |\n", r.algo.name, r.algo.cmd, table, heap, table+heap)
	}
	fmt.Fprintln(&out)

	pareto := paretoRates(rand.New(rand.NewPCG(*seed, 3)), *sources)
	near := nearRates(rand.New(rand.NewPCG(*seed, 5)), *sources/10)
	fmt.Fprintf(&out, "**Many sources**, each its own key for 20 windows: %d sources with heavy-tailed rates (Pareto, median 3.6%% of the limit, 1%% above it; most production clients never come near their limit) and %d sources near the limit (0.1x to 3x, log-uniform).\n\n", len(pareto), len(near))
	fmt.Fprintln(&out, "| algorithm | heavy-tailed: requests | wrong decisions | near the limit: requests | wrong decisions |")
	fmt.Fprintln(&out, "|---|---:|---:|---:|---:|")
	for _, a := range algos {
		if !strings.HasPrefix(a.name, "SW.INCR") && !strings.HasPrefix(a.name, "FW") {
			continue
		}
		r1, w1 := population(*seed, pareto, a)
		r2, w2 := population(*seed, near, a)
		fmt.Fprintf(&out, "| %s | %d | %d (%.3f%%) | %d | %d (%.2f%%) |\n", a.name, r1, w1, pct(w1, r1), r2, w2, pct(w2, r2))
	}
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "**Cloudflare's measure**: every request counts toward the rate (Cloudflare's rate limiting counts blocked requests too), and a decision is wrong when \"estimate over the limit\" differs from \"exact count over the limit\". Same heavy-tailed sources, the production estimator.")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "| estimator | requests | wrong decisions |")
	fmt.Fprintln(&out, "|---|---:|---:|")
	for _, p := range []int64{1, 4, 10} {
		n, w := estimator(*seed, pareto, p)
		name := "SW.INCR"
		if p > 1 {
			name = fmt.Sprintf("SW.INCR PRECISION %d", p)
		}
		fmt.Fprintf(&out, "| %s | %d | %d (%.4f%%) |\n", name, n, w, pct(w, n))
	}
	fmt.Fprintln(&out, "| Cloudflare's sliding window (2017, production traffic) | 400,000,000 | 0.003% |")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "Generated by `go run ./bench/accuracy -doc docs/algorithms.md -svg docs/accuracy.svg`.")

	if *svgPath != "" {
		sc := scenarios[1]
		var svg bytes.Buffer
		chart(&svg, sc, results[sc.name])
		if err := os.WriteFile(*svgPath, svg.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *docPath != "" {
		if err := rewriteSection(*docPath, out.String()); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "accuracy: wrote %s in %.1f s\n", *docPath, (clk.Mono() - began).Seconds())
		return
	}
	os.Stdout.Write(out.Bytes())
	fmt.Fprintf(os.Stderr, "accuracy: done in %.1f s\n", (clk.Mono() - began).Seconds())
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

const (
	beginMark = "<!-- accuracy:begin (generated by bench/accuracy; do not edit) -->"
	endMark   = "<!-- accuracy:end -->"
)

// rewriteSection replaces the text between the markers of path.
func rewriteSection(path, body string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q section", path, beginMark, endMark)
	}
	s = s[:i+len(beginMark)] + "\n" + body + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// chart draws one panel per algorithm: the cost it admitted in the
// trailing window over time, over the exact window's in grey, with the
// limit as a dashed line.
func chart(w io.Writer, sc scenario, results []result) {
	const (
		width, panelH, gap, left, top = 900, 92, 26, 46, 40
		samples                       = 900
	)
	var exact result
	var panels []result
	for _, r := range results {
		if strings.HasPrefix(r.algo.name, "exact") {
			exact = r
		} else {
			panels = append(panels, r)
		}
	}
	yMax := 2.2 * limit
	plotW := float64(width - left - 10)
	height := top + len(panels)*(panelH+gap) + 10
	series := func(r result) []float64 {
		tr := trailing{reqs: r.admissions}
		out := make([]float64, samples+1)
		for k := range out {
			out[k] = float64(tr.at(t0 + int64(k)*(sc.end-t0)/samples))
		}
		return out
	}
	points := func(v []float64, y0 float64) string {
		var b strings.Builder
		for k, x := range v {
			fmt.Fprintf(&b, "%.1f,%.1f ", float64(left)+plotW*float64(k)/samples, y0+panelH-panelH*math.Min(x, yMax)/yMax)
		}
		return b.String()
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="16" font-size="14" font-weight="bold">Requests admitted in the trailing 10 s window, %s traffic (limit 100)</text>`+"\n", left, sc.name)
	fmt.Fprintf(w, `<text x="%d" y="32" fill="#555">grey: exact sliding window (SL.INCR); colour: the algorithm; dashed: the limit. Time runs left to right over %d s.</text>`+"\n", left, (sc.end-t0)/sec)
	ex := series(exact)
	for i, r := range panels {
		y0 := float64(top + i*(panelH+gap) + 14)
		fmt.Fprintf(w, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-4, r.algo.name)
		fmt.Fprintf(w, `<text x="%d" y="%.0f" fill="#555">worst window %d (%.2fx)</text>`+"\n", left+190, y0-4, r.worst, float64(r.worst)/limit)
		fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#ccc"/>`+"\n", left, y0, plotW, panelH)
		for _, v := range []float64{0, limit, 2 * limit} {
			y := y0 + panelH - panelH*v/yMax
			fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.0f</text>`+"\n", left-4, y+4, v)
		}
		yl := y0 + panelH - panelH*limit/yMax
		fmt.Fprintf(w, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4 3"/>`+"\n", left, float64(left)+plotW, yl, yl)
		fmt.Fprintf(w, `<polyline fill="none" stroke="#999" stroke-width="1.5" points="%s"/>`+"\n", points(ex, y0))
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1.2" points="%s"/>`+"\n", palette[i%len(palette)], points(series(r), y0))
	}
	fmt.Fprintln(w, "</svg>")
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"}
