package main

import (
	"flag"
	"io"
	"testing"

	"github.com/limitdb/limitdb/config"
)

// TestRepeatedRegionPeerFlagsAdd: --region-peer is repeatable; the first
// flag replaces the config file's list and each later one adds to it.
func TestRepeatedRegionPeerFlagsAdd(t *testing.T) {
	cfg := config.Default()
	cfg.RegionPeers = "old=h:9" // from a config file
	fs := flag.NewFlagSet("limitdb", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := map[string]bool{}
	for _, d := range config.Builtin().All() {
		if d.Set != nil {
			fs.Var(directiveFlag{d, &cfg, given}, d.Name, d.Help)
		}
	}
	if err := fs.Parse([]string{"--region", "eu", "--region-peer", "us=127.0.0.1:7001", "--region-peer", "ap=127.0.0.1:7002"}); err != nil {
		t.Fatal(err)
	}
	if cfg.RegionPeers != "us=127.0.0.1:7001 ap=127.0.0.1:7002" {
		t.Fatalf("region-peer = %q", cfg.RegionPeers)
	}
}
