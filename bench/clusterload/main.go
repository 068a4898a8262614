// Command clusterload drives a Redis Cluster, limitdb's or redis-server's,
// through go-redis's ClusterClient, the way an application does: the client
// reads the slot map from a seed node, hashes each key to its slot and sends
// each command to the slot's primary. It measures a closed loop: each of
// -workers sends a pipeline of -pipeline commands, which the client splits
// by node and sends to every node at once, and sends the next as soon as
// every reply of the last is in.
//
//	clusterload -addr 127.0.0.1:7000 -duration 5s -cmd 'CL.THROTTLE {k} 99 100 60'
//	clusterload -addr 127.0.0.1:7000 -cmd 'INCR {k}'
//	clusterload -addr 127.0.0.1:7000 -script bench/lua/gcra.lua \
//	            -cmd 'EVALSHA {sha} 1 {k} 99 100 60'
//
// {k} in the command becomes <prefix><n>, n random below -keys; {sha} the
// SHA1 of -script, which is loaded on every primary first. A command's
// latency is its pipeline's round trip: from sending the pipeline until its
// last reply is in. Output is one CSV line:
// label,primaries,rps,p50_us,p99_us,p999_us,max_us,errors
// (primaries: how many the client's slot map names, so that a script can
// check the cluster's shape).
//
// bench/loadgen measures latency at a fixed offered load on raw sockets to
// one server; this measures throughput through a real cluster client, whose
// routing and per-node pipelines are part of what is measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7000", "seed nodes, comma-separated")
	command := flag.String("cmd", "PING", "command; {k} becomes a key, {sha} the script's SHA1")
	script := flag.String("script", "", "a Lua file to load on every primary for {sha}")
	keys := flag.Int("keys", 100000, "distinct keys ({k})")
	prefix := flag.String("prefix", "key:", "what each key starts with")
	workers := flag.Int("workers", 50, "concurrent pipelines")
	pipeline := flag.Int("pipeline", 16, "commands per pipeline")
	duration := flag.Duration("duration", 5*time.Second, "how long to measure")
	warmup := flag.Duration("warmup", 500*time.Millisecond, "load before measuring, not counted")
	label := flag.String("label", "", "first CSV field (default: the command name)")
	header := flag.Bool("header", false, "print the CSV header first")
	flag.Parse()
	if *workers < 1 || *pipeline < 1 || *keys < 1 {
		fail(errors.New("workers, pipeline and keys must be at least 1"))
	}
	args := strings.Fields(*command)
	if len(args) == 0 {
		fail(errors.New("no command"))
	}
	if *label == "" {
		*label = args[0]
	}

	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: strings.Split(*addr, ","),
		// One connection per worker to each node, so no worker waits for
		// the pool.
		PoolSize:     *workers,
		MinIdleConns: *workers,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	})
	defer cc.Close()
	primaries, err := countPrimaries(ctx, cc)
	if err != nil {
		fail(err)
	}
	if *script != "" {
		src, err := os.ReadFile(*script)
		if err != nil {
			fail(err)
		}
		sha, err := cc.ScriptLoad(ctx, string(src)).Result() // on every primary
		if err != nil {
			fail(fmt.Errorf("loading %s: %w", *script, err))
		}
		for i, a := range args {
			if a == "{sha}" {
				args[i] = sha
			}
		}
	}

	clk := clock.Real()
	start := clk.Mono()
	measureFrom, end := start+*warmup, start+*warmup+*duration
	results := make([]result, *workers)
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[w]
			rnd := rand.New(rand.NewSource(int64(w) + 1))
			cmds := make([]*redis.Cmd, *pipeline)
			for {
				sent := clk.Mono()
				if sent >= end {
					return
				}
				_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := range cmds {
						cmds[i] = p.Do(ctx, expand(args, *prefix, *keys, rnd)...)
					}
					return nil
				})
				done := clk.Mono()
				if sent < measureFrom {
					continue
				}
				if err != nil && !errors.Is(err, redis.Nil) {
					r.errors += countErrors(cmds)
					if r.firstErr == nil {
						r.firstErr = err
					}
				}
				us := int64((done - sent) / time.Microsecond)
				for range cmds {
					r.lat = append(r.lat, us)
				}
			}
		}()
	}
	wg.Wait()

	var all result
	for _, r := range results {
		all.errors += r.errors
		all.lat = append(all.lat, r.lat...)
		if all.firstErr == nil {
			all.firstErr = r.firstErr
		}
	}
	if all.firstErr != nil {
		fmt.Fprintf(os.Stderr, "clusterload: %d errors, the first: %v\n", all.errors, all.firstErr)
	}
	slices.Sort(all.lat)
	if *header {
		fmt.Println("label,primaries,rps,p50_us,p99_us,p999_us,max_us,errors")
	}
	fmt.Printf("%s,%d,%.0f,%d,%d,%d,%d,%d\n", *label, primaries,
		float64(len(all.lat))/duration.Seconds(),
		quantile(all.lat, 0.50), quantile(all.lat, 0.99), quantile(all.lat, 0.999), quantile(all.lat, 1),
		all.errors)
}

type result struct {
	lat      []int64 // microseconds, one per command
	errors   int
	firstErr error
}

// expand is the command with {k} replaced by a random key.
func expand(args []string, prefix string, keys int, rnd *rand.Rand) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if a == "{k}" {
			a = prefix + strconv.Itoa(rnd.Intn(keys))
		}
		out[i] = a
	}
	return out
}

func countErrors(cmds []*redis.Cmd) int {
	n := 0
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			n++
		}
	}
	return n
}

// countPrimaries is how many primaries the cluster's slot map names.
func countPrimaries(ctx context.Context, cc *redis.ClusterClient) (int, error) {
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	seen := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			seen[s.Nodes[0].Addr] = true
		}
	}
	return len(seen), nil
}

// quantile is the q-quantile of sorted xs, 0 when there are none.
func quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "clusterload:", err)
	os.Exit(1)
}
