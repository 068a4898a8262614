// Command rlsload drives an Envoy rate limit service (gRPC RLS v3,
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) the way an
// Envoy fleet does: many requests in flight over a few HTTP/2 connections,
// one descriptor per request, drawn at random from a key set. It speaks to
// limitdb's --grpc-port and to envoyproxy/ratelimit alike, so a benchmark
// can compare the two with the same load.
//
// Closed loop (-rate 0): each of -workers sends its next request as soon as
// the last one is answered. Open loop (-rate n): the workers share n
// requests a second on a fixed schedule, and a request's latency runs from
// the instant it was due, so a server that stalls is charged for the
// requests queued behind the stall (no coordinated omission). A worker
// that was idle until its request was due starts the clock when its timer
// wakes it instead: Go's timers wake an idle process up to a millisecond
// late (the runtime's network poller sleeps in whole milliseconds), and
// that lateness is the load generator's, not the server's.
//
// Output is one CSV line:
// label,rate,rps,p50_us,p99_us,p999_us,max_us,ok,over_limit,errors,sent
// (sent counts the warm-up's requests too: what the server served while
// the command ran)
//
//	rlsload -addr 127.0.0.1:8081 -duration 5s -keys 100000
//	rlsload -addr 127.0.0.1:8081 -rate 5000 -descriptor tight -keys 100
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "the rate limit service's gRPC address")
	label := flag.String("label", "rls", "the first CSV field")
	workers := flag.Int("workers", 50, "concurrent requests")
	conns := flag.Int("conns", 4, "gRPC connections the workers share")
	rate := flag.Int("rate", 0, "offered requests a second over all workers; 0 is a closed loop")
	duration := flag.Duration("duration", 5*time.Second, "how long to measure")
	warmup := flag.Duration("warmup", 500*time.Millisecond, "load before measuring, not counted")
	domain := flag.String("domain", "bench", "the request's domain")
	key := flag.String("descriptor", "user", "the descriptor entry's key")
	keys := flag.Int("keys", 100000, "distinct descriptor values, u0..u<keys-1>")
	flag.Parse()
	if *workers < 1 || *conns < 1 || *keys < 1 {
		fail(fmt.Errorf("workers, conns and keys must be at least 1"))
	}

	clients := make([]rlspb.RateLimitServiceClient, *conns)
	for i := range clients {
		cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fail(err)
		}
		defer cc.Close()
		cc.Connect()
		clients[i] = rlspb.NewRateLimitServiceClient(cc)
	}
	// One request answered on each connection before the clock starts.
	for _, c := range clients {
		if _, err := c.ShouldRateLimit(context.Background(), request(*domain, *key, "warm")); err != nil {
			fail(fmt.Errorf("first request: %w", err))
		}
	}

	clk := clock.Real()
	start := clk.Mono()
	measureFrom, end := start+*warmup, start+*warmup+*duration
	var interval time.Duration // between one worker's requests, open loop
	if *rate > 0 {
		interval = time.Duration(int64(time.Second) * int64(*workers) / int64(*rate))
	}
	results := make([]result, *workers)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[w]
			rnd := rand.New(rand.NewSource(int64(w) + 1))
			c := clients[w%len(clients)]
			req := request(*domain, *key, "")
			entry := req.Descriptors[0].Entries[0]
			// stagger the open-loop workers over one interval
			due := start + interval*time.Duration(w)/time.Duration(*workers)
			for {
				// from is where the request's latency starts: its due
				// instant, or, when the worker slept to wait for that
				// instant and its timer woke it late, the instant it woke.
				from := due
				if interval > 0 {
					if now := clk.Mono(); now < due {
						clk.Sleep(due - now)
						from = max(due, clk.Mono())
					}
				} else {
					due = clk.Mono()
					from = due
				}
				if due >= end {
					return
				}
				entry.Value = "u" + strconv.Itoa(rnd.Intn(*keys))
				resp, err := c.ShouldRateLimit(context.Background(), req)
				done := clk.Mono()
				sent.Add(1)
				if due >= measureFrom {
					switch {
					case err != nil:
						r.errors++
					case resp.OverallCode == rlspb.RateLimitResponse_OVER_LIMIT:
						r.over++
					default:
						r.ok++
					}
					r.lat = append(r.lat, int64((done-from)/time.Microsecond))
				}
				due += interval
			}
		}()
	}
	wg.Wait()

	var all result
	for _, r := range results {
		all.ok += r.ok
		all.over += r.over
		all.errors += r.errors
		all.lat = append(all.lat, r.lat...)
	}
	slices.Sort(all.lat)
	fmt.Printf("%s,%d,%.0f,%d,%d,%d,%d,%d,%d,%d,%d\n", *label, *rate,
		float64(len(all.lat))/duration.Seconds(),
		quantile(all.lat, 0.50), quantile(all.lat, 0.99), quantile(all.lat, 0.999), quantile(all.lat, 1),
		all.ok, all.over, all.errors, sent.Load()+int64(len(clients)))
}

type result struct {
	lat              []int64 // microseconds
	ok, over, errors int
}

func request(domain, key, value string) *rlspb.RateLimitRequest {
	return &rlspb.RateLimitRequest{
		Domain: domain,
		Descriptors: []*rlcommon.RateLimitDescriptor{{
			Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: key, Value: value}},
		}},
		HitsAddend: 1,
	}
}

// quantile of sorted, by the nearest rank; 0 for no samples.
func quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rlsload:", err)
	os.Exit(1)
}
