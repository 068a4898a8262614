package main

import (
	"math/rand"
	"strings"
	"testing"
)

// expand puts a key below keys, with the prefix, where {k} stands, and
// leaves every other argument as it is.
func TestExpand(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	args := []string{"CL.THROTTLE", "{k}", "99", "100", "60"}
	for range 1000 {
		got := expand(args, "lua:", 10, rnd)
		if len(got) != len(args) || got[0] != "CL.THROTTLE" || got[2] != "99" || got[4] != "60" {
			t.Fatalf("expand = %v", got)
		}
		k := got[1].(string)
		if !strings.HasPrefix(k, "lua:") || len(k) != len("lua:0") {
			t.Fatalf("key %q: want lua:<0..9>", k)
		}
	}
	if args[1] != "{k}" {
		t.Fatalf("expand changed its input: %v", args)
	}
}

func TestQuantile(t *testing.T) {
	xs := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 6}, {0.99, 10}, {1, 10}, {0, 1}} {
		if got := quantile(xs, c.q); got != c.want {
			t.Errorf("quantile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing is not 0")
	}
}
