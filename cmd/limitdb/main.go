// Command limitdb runs the limitdb server: a Redis-protocol datastore that
// runs rate-limiting algorithms next to their state.
//
// It owns flags and configuration, start-up, signals and the final snapshot
// on shutdown; everything else lives in resp/, engine/ and persistence/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

const usage = `limitdb %s: a rate-limiting datastore that speaks the Redis protocol.

Usage:
  limitdb [flags]

Examples:
  limitdb                          listen on 127.0.0.1:6379, snapshots in ./data
  limitdb --port 7000 --dir /var/lib/limitdb
  redis-cli -p 6379 CL.THROTTLE user:42 15 30 60

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, starts the server and blocks until it stops; it returns
// the process exit code.
func run(args []string, stderr io.Writer) int {
	cfg := resp.DefaultConfig()
	fs := flag.NewFlagSet("limitdb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, d := range resp.Directives() {
		if d.Set != nil {
			fs.Var(directiveFlag{d, &cfg}, d.Name, d.Help)
		}
	}
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, resp.Version)
		fs.VisitAll(func(f *flag.Flag) {
			name := "--" + f.Name
			if f.DefValue != "" && f.DefValue != "false" {
				name += " " + f.DefValue
			}
			fmt.Fprintf(stderr, "  %-28s %s\n", name, f.Usage)
		})
		fmt.Fprintf(stderr, "\nEvery flag is also a config directive: CONFIG GET shows it, CONFIG SET changes the mutable ones.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "limitdb: unexpected argument %q (flags start with --)\n", fs.Arg(0))
		return 2
	}
	if *version {
		fmt.Fprintf(os.Stdout, "limitdb %s\n", resp.Version)
		return 0
	}

	logger := log.New(stderr, "", log.LstdFlags)
	eng := engine.New(engine.SystemClock{}, cfg.Shards)
	srv := resp.New(cfg, eng, logger)
	ln, err := srv.Listen()
	if err != nil {
		logger.Printf("limitdb: cannot listen: %v", err)
		return 1
	}
	logger.Printf("limitdb %s listening on %s (pid %d, %d shards)", resp.Version, ln.Addr(), os.Getpid(), eng.Shards())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		if ctx.Err() != nil {
			logger.Printf("signal received, shutting down")
			srv.Close()
		}
	}()
	if err := srv.Serve(ln); err != nil {
		logger.Printf("limitdb: %v", err)
		return 1
	}
	logger.Printf("limitdb stopped")
	return 0
}

// directiveFlag exposes a configuration directive as a --name value flag,
// so flags, the config file and CONFIG GET/SET share one definition.
type directiveFlag struct {
	d   *resp.Directive
	cfg *resp.Config
}

func (f directiveFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.Get(f.cfg)
}

func (f directiveFlag) Set(v string) error { return f.d.Set(f.cfg, v) }
