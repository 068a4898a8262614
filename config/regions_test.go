package config

import (
	"strings"
	"testing"
	"time"
)

func TestRegionDirectivesFromAFile(t *testing.T) {
	t.Parallel()
	file := "region eu\nregion-peer us=127.0.0.1:7001\nregion-peer ap=127.0.0.1:7002\nregion-sync-interval 20ms\non-partition fair-share\nregion-auth s3cret\n"
	lines, err := Parse(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	if err := Apply(&cfg, lines); err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu" || cfg.RegionPeers != "us=127.0.0.1:7001 ap=127.0.0.1:7002" {
		t.Fatalf("region %q peers %q", cfg.Region, cfg.RegionPeers)
	}
	peers := cfg.Peers()
	if len(peers) != 2 || peers[1] != (Peer{"ap", "127.0.0.1:7002"}) {
		t.Fatalf("peers = %v", peers)
	}
	if cfg.SyncIntervalOrDefault() != 20*time.Millisecond || cfg.PeerTimeoutOrDefault() != DefaultRegionPeerTimeout {
		t.Fatalf("interval %v timeout %v", cfg.SyncIntervalOrDefault(), cfg.PeerTimeoutOrDefault())
	}
	if cfg.OnPartition != PartitionFairShare || cfg.RegionAuth != "s3cret" {
		t.Fatalf("on-partition %q auth %q", cfg.OnPartition, cfg.RegionAuth)
	}
	ds := Builtin()
	for name, want := range map[string]string{"region-sync-interval": "20ms", "region-peer-timeout": "2s", "on-partition": "fair-share", "region-tls": "no"} {
		if got := ds.Lookup(name).Get(&cfg); got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
}

func TestRegionDirectivesRefuseBadValues(t *testing.T) {
	t.Parallel()
	ds := Builtin()
	cases := []struct{ name, value, want string }{
		{"region-peer", "us", "NAME=HOST:PORT"},
		{"region-peer", "us=127.0.0.1", "invalid address"},
		{"region-peer", "us=127.0.0.1:0", "invalid port"},
		{"region-peer", "us=h:1 us=h:2", "given twice"},
		{"region-peer", "u:s=h:1", "NAME=HOST:PORT"},
		{"region", "a b", "region name"},
		{"region-sync-interval", "0", "must be positive"},
		{"region-sync-interval", "100us", "at least 1ms"},
		{"region-sync-interval", "soon", "invalid duration"},
		{"on-partition", "panic", "keep-last, fair-share, local"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			cfg := Default()
			err := ds.Lookup(tc.name).Set(&cfg, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Set(%q) = %v, want an error containing %q", tc.value, err, tc.want)
			}
		})
	}
}

func TestRegionPeerSetReplacesTheList(t *testing.T) {
	t.Parallel()
	cfg := Default()
	d := Builtin().Lookup("region-peer")
	if err := d.Set(&cfg, "us=h:1 ap=h:2"); err != nil {
		t.Fatal(err)
	}
	if err := d.Set(&cfg, "sa=h:3"); err != nil {
		t.Fatal(err)
	}
	if cfg.RegionPeers != "sa=h:3" {
		t.Fatalf("peers = %q, want the second list alone", cfg.RegionPeers)
	}
	if d.Mutable {
		t.Fatal("region-peer is read at start-up: CONFIG SET must refuse it")
	}
}
