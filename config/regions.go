package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/engine/limit"
)

// Regions is global limits across regions (docs/global.md): this node's
// region, its peer regions and how it syncs with them. Off until Region is
// set.
type Regions struct {
	Region string // region: this node's region name ("": no regions)
	// RegionPeers is region-peer: "NAME=HOST:PORT ..." (ParsePeers), the
	// other regions' addresses; repeated flags and config lines add to it.
	RegionPeers        string
	RegionSyncInterval time.Duration // region-sync-interval: between two batches to each peer
	RegionPeerTimeout  time.Duration // region-peer-timeout: silence after which a peer is partitioned
	OnPartition        string        // on-partition: keep-last, fair-share or local
	RegionUser         string        // region-user: the user this node authenticates to peers as ("": AUTH password)
	RegionAuth         string        // region-auth: the password it authenticates with ("": none)
	RegionTLS          bool          // region-tls: TLS towards peers, with tls-ca-cert-file and tls-cert-file/tls-key-file
}

// The on-partition policies.
const (
	PartitionKeepLast  = "keep-last"
	PartitionFairShare = "fair-share"
	PartitionLocal     = "local"
)

// Region defaults.
const (
	DefaultRegionSyncInterval = 50 * time.Millisecond
	DefaultRegionPeerTimeout  = 2 * time.Second
)

// Peer is one peer region: its name and the address of its client port.
type Peer struct {
	Name string
	Addr string // host:port
}

// ValidRegionName reports whether name may name a region: 1 to 64
// characters of [A-Za-z0-9_.-].
func ValidRegionName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '-') {
			return false
		}
	}
	return true
}

// ParsePeers reads region-peer's value: NAME=HOST:PORT words separated by
// spaces. A name given twice is an error.
func ParsePeers(v string) ([]Peer, error) {
	var out []Peer
	seen := map[string]bool{}
	for _, w := range strings.Fields(v) {
		name, addr, ok := strings.Cut(w, "=")
		if !ok || !ValidRegionName(name) {
			return nil, fmt.Errorf("region-peer wants NAME=HOST:PORT, got '%s'", w)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("region-peer %s: invalid address '%s' (HOST:PORT)", name, addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("region-peer %s: invalid port '%s'", name, port)
		}
		if seen[name] {
			return nil, fmt.Errorf("region-peer %s given twice", name)
		}
		seen[name] = true
		out = append(out, Peer{Name: name, Addr: addr})
	}
	return out, nil
}

// Peers is the parsed region-peer list (it was validated when set).
func (c *Config) Peers() []Peer {
	ps, _ := ParsePeers(c.RegionPeers)
	return ps
}

// SyncIntervalOrDefault is region-sync-interval, or its default when unset.
func (c *Config) SyncIntervalOrDefault() time.Duration {
	if c.RegionSyncInterval <= 0 {
		return DefaultRegionSyncInterval
	}
	return c.RegionSyncInterval
}

// PeerTimeoutOrDefault is region-peer-timeout, or its default when unset.
func (c *Config) PeerTimeoutOrDefault() time.Duration {
	if c.RegionPeerTimeout <= 0 {
		return DefaultRegionPeerTimeout
	}
	return c.RegionPeerTimeout
}

// duration is a directive for a positive duration written as limit's
// durations are (50ms, 2s).
func duration(name, help string, mutable bool, field func(c *Config) *time.Duration, def time.Duration) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string {
			d := *field(c)
			if d <= 0 {
				d = def
			}
			return limit.FormatDuration(d)
		},
		Set: func(c *Config, v string) error {
			d, err := limit.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("invalid duration '%s': %v", v, err)
			}
			if d < time.Millisecond {
				return fmt.Errorf("argument must be at least 1ms")
			}
			*field(c) = d
			return nil
		}}
}

func regions() []*Directive {
	region := &Directive{Name: "region", Help: "this node's region: global policies (scope global) are shared with the region-peer regions (empty: none; docs/global.md)",
		Get: func(c *Config) string { return c.Region },
		Set: func(c *Config, v string) error {
			if v != "" && !ValidRegionName(v) {
				return fmt.Errorf("region name must be 1 to 64 characters of A-Z a-z 0-9 _ . -")
			}
			c.Region = v
			return nil
		}}
	peer := &Directive{Name: "region-peer", Help: "NAME=HOST:PORT of a peer region's limitdb (repeat the flag or line for each peer)", Words: true, Repeat: true,
		Get: func(c *Config) string { return c.RegionPeers },
		Set: func(c *Config, v string) error {
			ps, err := ParsePeers(v)
			if err != nil {
				return err
			}
			words := make([]string, len(ps))
			for i, p := range ps {
				words[i] = p.Name + "=" + p.Addr
			}
			c.RegionPeers = strings.Join(words, " ")
			return nil
		}}
	return []*Directive{
		region, peer,
		duration("region-sync-interval", "time between two batches of global policies' counts sent to each peer region", true,
			func(c *Config) *time.Duration { return &c.RegionSyncInterval }, DefaultRegionSyncInterval),
		duration("region-peer-timeout", "silence after which a peer region counts as partitioned and on-partition applies", true,
			func(c *Config) *time.Duration { return &c.RegionPeerTimeout }, DefaultRegionPeerTimeout),
		oneOf("on-partition", "what global policies count of a partitioned peer: keep-last (its last counts), fair-share (at least limit/regions each), local (nothing)",
			[]string{PartitionKeepLast, PartitionFairShare, PartitionLocal}, func(c *Config) *string { return &c.OnPartition }),
		String("region-user", "the user this node authenticates to peer regions as (empty: AUTH with the password alone)", true,
			func(c *Config) *string { return &c.RegionUser }),
		String("region-auth", "the password this node authenticates to peer regions with (empty: none)", true,
			func(c *Config) *string { return &c.RegionAuth }),
		Bool("region-tls", "connect to peer regions over TLS, trusting tls-ca-cert-file and presenting tls-cert-file", false,
			func(c *Config) *bool { return &c.RegionTLS }),
	}
}
