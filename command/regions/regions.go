// Package regions is the family of global policies' sync between regions
// (docs/global.md): RGN.PUSH, which peer regions send their batches with,
// and INFO regions. It owns the node's region.Region, built from the
// region directives, and starts its sender once the node serves.
//
// It imports the command core, policy and region; never another family,
// the transport or the assembly.
package regions

import (
	"fmt"
	"strings"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/redisarg"
	"github.com/limitdb/limitdb/policy"
	"github.com/limitdb/limitdb/region"
)

// Family is RGN.PUSH and INFO regions over the node's region.
type Family struct {
	policies *policy.Store
	env      command.Env
	reg      *region.Region // nil until Start, and without a region
}

// New returns the family serving the global policies of store.
func New(store *policy.Store) *Family { return &Family{policies: store} }

// Register adds RGN.PUSH and INFO regions to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env = env
	t.Register(&command.Command{Name: "rgn.push", Arity: -3, Flags: command.FlagWrite | command.FlagAdmin,
		Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of slots",
		Summary: "A peer region's batch of its counts for global policies' keys, collected at sent_at (Unix ns, its clock), each slot merged by taking the larger (docs/global.md): how many slots changed anything.",
		Syntax:  "region sent_at [key id value ...]", Handler: f.cmdPush})
	t.AddInfo("regions", 88, f.info)
}

// Start builds the region from the configuration and sends batches to the
// peers until the command layer closes. Without a region it does nothing.
func (f *Family) Start() error {
	cfg := f.env.Config()
	if cfg.Region == "" {
		if cfg.RegionPeers != "" {
			return fmt.Errorf("region-peer is set but region is not: name this node's region")
		}
		return nil
	}
	var peers []region.Peer
	for _, p := range cfg.Peers() {
		if p.Name == cfg.Region {
			return fmt.Errorf("region-peer %s names this node's own region", p.Name)
		}
		peers = append(peers, region.Peer{Name: p.Name, Addr: p.Addr})
	}
	dial := region.Dialer{
		User: func() string { return f.env.Config().RegionUser },
		Pass: func() string { return f.env.Config().RegionAuth },
	}
	if cfg.RegionTLS {
		tc, err := region.ClientTLS(cfg.TLSCACertFile, cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return err
		}
		dial.TLS = tc
	}
	reg := region.New(region.Options{Name: cfg.Region, Peers: peers, Dial: dial, Clock: f.env.Clock, Logger: f.env.Logger,
		Interval:    func() time.Duration { c := f.env.Config(); return c.SyncIntervalOrDefault() },
		Timeout:     func() time.Duration { c := f.env.Config(); return c.PeerTimeoutOrDefault() },
		OnPartition: func() string { return f.env.Config().OnPartition },
	}, f.policies)
	f.reg = reg
	f.policies.SetPeers(reg)
	f.env.Logger.Printf("region %s: global policies shared with %d peer region(s) every %v", cfg.Region, len(peers), cfg.SyncIntervalOrDefault())
	go reg.Run(f.env.Done)
	return nil
}

// Region is the node's region, nil without one.
func (f *Family) Region() *region.Region { return f.reg }

// cmdPush answers RGN.PUSH region sent_at [key id value ...].
func (f *Family) cmdPush(c *command.Client, args [][]byte) {
	if f.reg == nil {
		c.Err("ERR this node has no region (start it with --region NAME and --region-peer)")
		return
	}
	sentAt, ok := redisarg.ParseInt(args[2])
	if !ok {
		c.Err("ERR sent_at is not an integer")
		return
	}
	n, err := f.reg.Push(c.Engine(), args[1], sentAt, args[3:])
	if err != nil {
		c.Errf("%v", err)
		return
	}
	c.Int(int64(n))
}

func (f *Family) info(_ *engine.Engine, b *strings.Builder) {
	if f.reg == nil {
		b.WriteString("region:\r\n")
		return
	}
	f.reg.AppendInfo(b)
}
