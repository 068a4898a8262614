package metrics

import "testing"

// TestListenAddr: a port alone listens on loopback; anything else as given.
func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"9121":           "127.0.0.1:9121",
		"0":              "127.0.0.1:0",
		"127.0.0.1:9121": "127.0.0.1:9121",
		":9121":          ":9121",
		"[::1]:9121":     "[::1]:9121",
	} {
		if got := ListenAddr(in); got != want {
			t.Errorf("ListenAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
