package node

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// runTest starts a node on a loopback port with Run, its data in dir, and
// returns it once it serves and the channel Run's result arrives on.
func runTest(t *testing.T, ctx context.Context, dir string) (*Node, chan error) {
	t.Helper()
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, dir, 0
	n := New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- n.Run(ctx, ln) }()
	t.Cleanup(func() { n.Close() })
	select {
	case <-n.Serving():
	case err := <-ran:
		t.Fatalf("Run: %v", err)
	}
	return n, ran
}

func result(t *testing.T, ran chan error) error {
	t.Helper()
	select {
	case err := <-ran:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestRunEndsWithItsContext: the end of ctx closes the node at once and
// saves nothing.
func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	n, ran := runTest(t, ctx, dir)
	n.CommandServer().NewLocalClient().DoString("SET", "k", "v")
	cancel()
	if err := result(t, ran); err != nil {
		t.Fatalf("Run = %v", err)
	}
	<-n.Done()
	if _, err := os.Stat(filepath.Join(dir, "dump.ldb")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a snapshot after the context ended: %v", err)
	}
}

// TestRunShutdownSavesAndTheNextRunLoads: Shutdown writes the final
// snapshot, and the next Run on the same directory starts from it.
func TestRunShutdownSavesAndTheNextRunLoads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n, ran := runTest(t, context.Background(), dir)
	n.CommandServer().NewLocalClient().DoString("SET", "k", "v")
	if err := n.Shutdown(true, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := result(t, ran); err != nil {
		t.Fatalf("Run = %v", err)
	}
	n2, _ := runTest(t, context.Background(), dir)
	if got := string(n2.CommandServer().NewLocalClient().DoString("GET", "k")); got != "$1\r\nv\r\n" {
		t.Fatalf("GET k after a restart = %q", got)
	}
}

// TestRunRefusesADamagedSnapshot: start-up stops, naming the file, and
// the node is closed.
func TestRunRefusesADamagedSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.ldb"), []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, dir, 0
	n := New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = n.Run(context.Background(), ln)
	if err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Fatalf("Run = %v, want a refusal", err)
	}
	select {
	case <-n.Done():
	default:
		t.Fatal("the node is not closed")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener is still open")
	}
}
