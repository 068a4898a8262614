package metrics

import (
	"context"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
)

// startWithMetrics runs a server on 127.0.0.1:0 with a fake clock and its
// metrics endpoint on another free port, as cmd/limitdb starts them
// (node.Run); it returns the server, a client, and the endpoint's address.
func startWithMetrics(t *testing.T) (*node.Node, *redis.Client, net.Addr) {
	t.Helper()
	eng := engine.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()), 0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Dir = t.TempDir()
	srv := node.New(cfg, eng, log.New(io.Discard, "", 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var addr net.Addr
	srv.BeforeServe = func() error { // where cmd/limitdb starts the endpoint
		var err error
		addr, err = Serve(srv.CommandServer(), srv.Snapshots(), srv.Policies(), srv.RLS(), srv.Analytics(), "127.0.0.1:0", nil)
		return err
	}
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(context.Background(), ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-ran
	})
	select {
	case <-srv.Serving():
	case err := <-ran:
		ran <- err
		t.Fatalf("start-up: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	t.Cleanup(func() { c.Close() })
	return srv, c, addr
}
