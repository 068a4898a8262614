package node

import (
	"bufio"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/rls"
)

func TestReadStatuses(t *testing.T) {
	one := "*8\r\n:1\r\n:0\r\n:3599\r\n:1\r\n:1\r\n:0\r\n:0\r\n:0\r\n"
	cases := []struct {
		name, reply string
		n           int
		err         string // "" none
		want        rls.Status
	}{
		{"one charge", one, 1, "", rls.Status{Over: true, ResetAfter: 3599, Stats: rls.Stats{TotalHits: 1, OverLimit: 1}}},
		{"a gate's refusal", "-OOM command not allowed when used memory > 'maxmemory'.\r\n", 1, "OOM command not allowed when used memory > 'maxmemory'.", rls.Status{}},
		{"too few integers", "*8\r\n:1\r\n", 1, "EOF", rls.Status{}},
		{"a count for another request", one, 2, "rls: RLS.CHARGE answered 8 integers for 2 charges", rls.Status{}},
		{"not an integer", "*8\r\n+OK\r\n", 1, "rls: unexpected reply to RLS.CHARGE: \"+OK\"", rls.Status{}},
		{"not an array", "$2\r\nhi\r\n", 1, "rls: unexpected reply to RLS.CHARGE: \"$2\"", rls.Status{}},
	}
	readers := map[string]func(reply string) lineReader{
		"a connection":  func(reply string) lineReader { return connLines{bufio.NewReader(strings.NewReader(reply))} },
		"a local reply": func(reply string) lineReader { r := replyLines(reply); return &r },
	}
	for _, c := range cases {
		for from, reader := range readers {
			t.Run(c.name+" from "+from, func(t *testing.T) {
				out := make([]rls.Status, c.n)
				err := readStatuses(reader(c.reply), c.n, statuses{out: out})
				switch {
				case c.err == "" && err != nil:
					t.Fatalf("error %v", err)
				case c.err != "" && (err == nil || err.Error() != c.err):
					t.Fatalf("error %v, want %s", err, c.err)
				case c.err == "" && out[0] != c.want:
					t.Fatalf("%+v, want %+v", out[0], c.want)
				}
			})
		}
	}
}

func TestRedirected(t *testing.T) {
	cases := []struct {
		err    error
		addr   string
		asking bool
		ok     bool
	}{
		{errReply("MOVED 3999 127.0.0.1:6381"), "127.0.0.1:6381", false, true},
		{errReply("ASK 3999 127.0.0.1:6381"), "127.0.0.1:6381", true, true},
		{errReply("TRYAGAIN Multiple keys request during rehashing of slot"), "", false, false},
		{errReply("CLUSTERDOWN The cluster is down"), "", false, false},
		{unreachable("127.0.0.1:6381", errReply("MOVED 1 x:1")), "127.0.0.1:6381", false, false},
		{nil, "", false, false},
	}
	for _, c := range cases {
		addr, asking, ok := redirected(c.err)
		if ok != c.ok || (ok && (addr != c.addr || asking != c.asking)) {
			t.Errorf("%v: %q %v %v, want %q %v %v", c.err, addr, asking, ok, c.addr, c.asking, c.ok)
		}
	}
}
