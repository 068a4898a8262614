package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/limitdb/limitdb/client"
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
