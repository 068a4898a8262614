// Command limitdb runs the limitdb server: a Redis-protocol datastore that
// runs rate-limiting algorithms next to their state.
//
// It owns flags, configuration and signals; the start-up and shutdown
// sequence, final snapshot included, is node.Run's.
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
	"path/filepath"
	"strings"
	"syscall"

	"github.com/limitdb/limitdb/analytics"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/dashboard"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/metrics"
	"github.com/limitdb/limitdb/node"
)

const usage = `limitdb %s: a rate-limiting datastore that speaks the Redis protocol.

Usage:
  limitdb [flags]

Examples:
  limitdb                          listen on 127.0.0.1:6379, snapshots in ./data
  limitdb --port 7000 --dir /var/lib/limitdb
  limitdb --rules examples/limits.yaml
  redis-cli -p 6379 CL.THROTTLE user:42 15 30 60

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, starts the server and blocks until it stops; it returns
// the process exit code.
func run(args []string, stderr io.Writer) int {
	cfg := config.Default()
	fs := flag.NewFlagSet("limitdb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	given := map[string]bool{} // the repeatable flags given so far
	for _, d := range config.Builtin().All() {
		if d.Set != nil {
			fs.Var(directiveFlag{d, &cfg, given}, d.Name, d.Help)
		}
	}
	version := fs.Bool("version", false, "print the version and exit")
	fs.String("config", "", "read directives from this file (redis.conf syntax) before the flags, which override it")
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, command.Version)
		fs.VisitAll(func(f *flag.Flag) {
			name := "--" + f.Name
			if f.DefValue != "" && f.DefValue != "false" {
				name += " " + f.DefValue
			}
			fmt.Fprintf(stderr, "  %-28s %s\n", name, f.Usage)
		})
		fmt.Fprintf(stderr, "\nEvery flag is also a config directive: CONFIG GET shows it, CONFIG SET changes the mutable ones.\n")
	}
	if path := configFlag(args); path != "" {
		if err := config.LoadFile(path, &cfg); err != nil {
			fmt.Fprintf(stderr, "limitdb: %v\n", err)
			return 2
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		cfg.ConfigFile = path // CONFIG REWRITE's
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
		fmt.Fprintf(os.Stdout, "limitdb %s\n", command.Version)
		return 0
	}

	// Signals are caught from here on, before the port opens: a SIGTERM
	// that arrives as soon as the server is listening is a clean shutdown,
	// not the default action that kills the process.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	logger := log.New(stderr, "", log.LstdFlags)
	adjustOpenFiles(&cfg, logger)
	eng := engine.New(clock.Real(), cfg.Shards)
	srv := node.New(cfg, eng, logger)
	if cfg.MetricsAddr != "" {
		srv.BeforeServe = func() error {
			dash := dashboard.New(dashboard.Sources{Server: srv.CommandServer(), Policies: srv.Policies(), Cluster: srv.ClusterSummary,
				Analytics: dashboard.AnalyticsFunc(func() any {
					if v := srv.Analytics().DashboardView(analytics.ViewOptions{Seconds: 180, Minutes: 60}); v.Enabled {
						return v
					}
					return nil
				})})
			addr, err := metrics.Serve(srv.CommandServer(), srv.Snapshots(), srv.Policies(), srv.RLS(), srv.Analytics(), cfg.MetricsAddr, logger,
				metrics.Route{Pattern: "/dashboard", Handler: dash}, metrics.Route{Pattern: "/dashboard/", Handler: dash})
			if err != nil {
				return fmt.Errorf("cannot serve metrics: %w", err)
			}
			logger.Printf("metrics at http://%s/metrics", addr)
			if cfg.Dashboard {
				logger.Printf("dashboard at http://%s/dashboard", addr)
			}
			return nil
		}
	} else if cfg.Dashboard {
		logger.Printf("dashboard yes, but metrics-addr is empty: no listener serves the dashboard")
	}
	go func() {
		// A signal is acted on once the node serves; one that came sooner
		// waits in sigs.
		select {
		case <-srv.Serving():
		case <-srv.Done():
			return
		}
		for {
			select {
			case sig := <-sigs:
				if shutdownOnSignal(srv, sig, logger) {
					return
				}
			case <-srv.Done():
				return
			}
		}
	}()
	if err := srv.Run(context.Background(), nil); err != nil {
		logger.Printf("limitdb: %v", err)
		return 1
	}
	logger.Printf("limitdb stopped")
	return 0
}

// shutdownOnSignal stops the server for sig as shutdown-on-sigterm or
// shutdown-on-sigint says, and reports whether it did. As in Redis 7, a
// snapshot that cannot be written keeps the server running, saying why,
// unless the mode says force: exiting then would lose every limit since
// the last good snapshot. The snapshot is tried while serving; once it is
// written, connections finish what they have sent and OnShutdown writes
// the final one, with their effects.
func shutdownOnSignal(srv *node.Node, sig os.Signal, logger *log.Logger) bool {
	cfg := srv.Config()
	words := cfg.ShutdownOnSigterm
	if sig == syscall.SIGINT {
		words = cfg.ShutdownOnSigint
	}
	mode, err := config.ParseShutdownMode(words)
	if err != nil { // the directive refuses bad words: not expected
		mode = config.ShutdownMode{Save: true}
	}
	if mode.Save {
		if err := srv.Save(); err != nil {
			if !mode.Force {
				logger.Printf("%v received, but the snapshot cannot be written (%v): not exiting, so that no limit is lost. "+
					"Fix the cause and signal again, or use SHUTDOWN NOSAVE, or shutdown-on-sigterm force", sig, err)
				return false
			}
			logger.Printf("%v received; the snapshot cannot be written (%v), exiting all the same (force)", sig, err)
			mode.Save = false
		}
	}
	logger.Printf("%v received, shutting down", sig)
	srv.Shutdown(mode.Save, node.ShutdownGrace)
	return true
}

// directiveFlag exposes a configuration directive as a --name value flag,
// so flags, the config file and CONFIG GET/SET share one definition.
type directiveFlag struct {
	d     *config.Directive
	cfg   *config.Config
	given map[string]bool
}

func (f directiveFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.Get(f.cfg)
}

// Set applies the flag. A repeatable directive's first flag replaces what
// the config file gave; each later one adds to it.
func (f directiveFlag) Set(v string) error {
	if f.d.Repeat && f.given[f.d.Name] {
		v = f.d.Get(f.cfg) + " " + v
	}
	f.given[f.d.Name] = true
	return f.d.Set(f.cfg, v)
}

// configFlag finds --config in args before the flags are parsed, so that
// the file is applied first and every other flag overrides it.
func configFlag(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasVal {
			return val
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
