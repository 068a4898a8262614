package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// Run is the node's one start-up and shutdown sequence, the one
// cmd/limitdb and the end-to-end tests use. In order, it
//
//   - loads the users and limits (Prepare) and logs the security warnings;
//   - restores the state: the append-only file when appendonly is yes and
//     there is one, as Redis prefers it, the snapshot otherwise;
//   - starts the append-only file, so that a file that cannot be written
//     stops start-up;
//   - loads the rules file and the rate limit service's rules;
//   - listens on ln, or on the configured address when ln is nil, then on
//     the rate limit service's gRPC and HTTP ports when they are set;
//   - calls BeforeServe, when set;
//   - serves until Shutdown (SHUTDOWN, or a signal in cmd/limitdb), whose
//     final snapshot OnShutdown writes unless it is set already, or until
//     Close or the end of ctx, which stop at once and save nothing.
//
// It returns why start-up stopped (having closed the node), or
// OnShutdown's error, or nil. Serving is closed once it serves.
func (n *Node) Run(ctx context.Context, ln net.Listener) error {
	fail := func(err error) error { // stop what started, as Close does
		if ln != nil {
			ln.Close()
		}
		n.Close()
		return err
	}
	if err := n.Prepare(); err != nil {
		return fail(err)
	}
	for _, w := range n.cmds.SecurityWarnings() {
		n.logger.Print(w)
	}
	if err := n.loadData(); err != nil {
		return fail(err)
	}
	if err := n.persist.StartAOF(); err != nil {
		return fail(err)
	}
	if err := n.StartRules(); err != nil {
		return fail(err)
	}
	if err := n.regions.Start(); err != nil {
		return fail(fmt.Errorf("regions: %w", err))
	}
	if err := n.StartRLS(); err != nil {
		return fail(fmt.Errorf("Envoy rate limit service: %w", err))
	}
	if ln == nil {
		var err error
		if ln, err = n.Listen(); err != nil {
			return fail(fmt.Errorf("cannot listen: %w", err))
		}
	}
	n.logger.Printf("limitdb %s listening on %s (pid %d, %d shards)", command.Version, ln.Addr(), os.Getpid(), n.Engine().Shards())
	if _, err := n.StartGRPC(); err != nil {
		return fail(fmt.Errorf("Envoy rate limit service: %w", err))
	}
	if _, err := n.StartRLSHTTP(); err != nil {
		return fail(fmt.Errorf("Envoy rate limit service (HTTP): %w", err))
	}
	if n.BeforeServe != nil {
		if err := n.BeforeServe(); err != nil {
			return fail(err)
		}
	}
	if n.OnShutdown == nil {
		// The final snapshot is written once, after serving stops, with
		// the effects of every command the connections had sent.
		n.OnShutdown = func(save bool) error {
			if save {
				return n.persist.Save()
			}
			return nil
		}
	}
	stop := context.AfterFunc(ctx, func() { n.Close() })
	defer stop()
	return n.Serve(ln)
}

// loadData restores the state before serving: the append-only file when
// appendonly is yes and there is one; the snapshot otherwise, with the
// replication ID and offset it kept (Server.RestoreReplication). A damaged
// append-only file stops start-up, naming the file and offset
// (aof-load-truncated yes accepts a torn last record).
func (n *Node) loadData() error {
	if n.Config().AppendOnly.AppendOnly {
		st, loaded, err := n.persist.LoadAOF()
		if err != nil {
			return fmt.Errorf("refusing to start: %v", err)
		}
		if loaded {
			n.logger.Printf("append-only file loaded: %d keys from the base, %d records from %d files", st.Base.Keys, st.Records, st.Files)
			if st.Truncated > 0 {
				n.logger.Printf("WARNING: the append-only file ended inside a record (a crash while writing): %d bytes cut off (aof-load-truncated yes)", st.Truncated)
			}
			n.cmds.RestoreReplication(false)
			return nil
		}
	}
	if err := n.loadSnapshot(); err != nil {
		return err
	}
	n.cmds.RestoreReplication(true)
	return nil
}

// loadSnapshot restores the snapshot before serving. A corrupt file stops
// start-up unless --discard-corrupt-snapshot yes moves it aside; one whose
// keys do not fit the shards stops it in any case.
func (n *Node) loadSnapshot() error {
	path := n.persist.SnapshotPath()
	st, err := n.persist.LoadSnapshot()
	if err != nil {
		if !n.Config().DiscardCorrupt || errors.Is(err, engine.ErrShardFull) { // a sound file that needs more shards is never discarded
			return fmt.Errorf("refusing to start: %s: %v (start with --discard-corrupt-snapshot yes to move it aside and start empty)", path, err)
		}
		aside := path + ".corrupt"
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("%s: %v; moving it aside failed: %v", path, err, rerr)
		}
		n.Engine().Flush()
		n.logger.Printf("WARNING: %s: %v; moved to %s, starting empty", path, err, aside)
		return nil
	}
	if st.Created.IsZero() {
		n.logger.Printf("no snapshot at %s, starting empty", path)
		return nil
	}
	n.logger.Printf("snapshot %s loaded: %d keys, %d skipped as expired, %d sections in %v",
		path, st.Keys, st.Expired, st.Sections, st.Duration.Round(time.Microsecond))
	for _, name := range st.UnknownSections {
		n.logger.Printf("WARNING: snapshot section %q is not known to this build; ignored", name)
	}
	return nil
}
