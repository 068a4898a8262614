package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
)

func Example() {
	rdb := redis.NewClient(client.Options("127.0.0.1:6379"))
	defer rdb.Close()
	lim := client.New(rdb)

	// redis-cell's classic: a burst of 15, then 30 per minute.
	res, err := lim.Take(context.Background(), "user:42", client.Throttle{MaxBurst: 15, Count: 30, Period: time.Minute}, 1)
	if err != nil {
		fmt.Println("limitdb:", err)
		return
	}
	if res.Limited {
		fmt.Printf("slow down: retry in %v\n", res.RetryAfter)
		return
	}
	fmt.Printf("%d of %d left\n", res.Remaining, res.Limit)
}

func ExampleClient_Acquire() {
	rdb := redis.NewClient(client.Options("127.0.0.1:6379"))
	defer rdb.Close()
	lim := client.New(rdb)
	ctx := context.Background()

	// At most 20 jobs of this user at once; a crashed worker's slot frees
	// itself after a minute.
	lease, err := lim.Acquire(ctx, "jobs:user:42", client.Concurrency{Limit: 20, TTL: time.Minute})
	if err != nil {
		fmt.Println("limitdb:", err)
		return
	}
	if lease.Limited {
		fmt.Printf("busy: a slot frees in at most %v\n", lease.RetryAfter)
		return
	}
	defer lim.Release(ctx, "jobs:user:42", lease.LeaseID)
	// ... the job; a long one renews its lease before it expires:
	if _, err := lim.Renew(ctx, "jobs:user:42", lease.LeaseID, time.Minute); errors.Is(err, client.ErrNoLease) {
		fmt.Println("lost the slot: stop")
	}
}

func ExampleWithNearCache() {
	rdb := redis.NewClient(client.Options("127.0.0.1:6379"))
	defer rdb.Close()
	// Denials of GCRA and token-bucket limits are answered in-process until
	// their retry_after; concurrent calls share pipelines.
	lim := client.New(rdb, client.WithNearCache(clock.Real()), client.WithBatching(4))

	res, err := lim.Take(context.Background(), "user:42", client.Policy{Name: "api-per-user"}, 1)
	if err != nil {
		fmt.Println("limitdb:", err)
		return
	}
	fmt.Println("limited:", res.Limited)
}
