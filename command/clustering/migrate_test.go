package clustering

import (
	"fmt"
	"io"
	"testing"

	"github.com/limitdb/limitdb/resp"
)

// TestReadRestoreReplies: which keys the target took and what MIGRATE
// answers, for each mix of replies.
func TestReadRestoreReplies(t *testing.T) {
	t.Parallel()
	ok, busy := resp.Reply{Type: '+', Line: "OK"}, resp.Reply{Type: '-', Line: "BUSYKEY Target key name already exists."}
	noauth := resp.Reply{Type: '-', Line: "WRONGPASS invalid username-password pair or user is disabled."}
	for _, tc := range []struct {
		name    string
		auth    bool
		replies []resp.Reply // then the connection fails
		n       int
		taken   []bool
		want    string
	}{
		{"all taken", false, []resp.Reply{ok, ok}, 2, []bool{true, true}, ""},
		{"auth then all", true, []resp.Reply{ok, ok}, 1, []bool{true}, ""},
		{"one busy", false, []resp.Reply{busy, ok, busy}, 3, []bool{false, true, false}, "ERR Target instance replied with error: " + busy.Line},
		{"auth refused", true, []resp.Reply{noauth, ok}, 1, []bool{false}, "ERR Target instance replied with error: " + noauth.Line},
		{"cut short", false, []resp.Reply{ok}, 2, []bool{true, false}, "IOERR error or timeout reading to target instance"},
		{"no auth reply", true, nil, 1, nil, "IOERR error or timeout reading to target instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := 0
			taken, got := readRestoreReplies(tc.auth, tc.n, func() (resp.Reply, error) {
				if next == len(tc.replies) {
					return resp.Reply{}, io.ErrUnexpectedEOF
				}
				next++
				return tc.replies[next-1], nil
			})
			if got != tc.want || fmt.Sprint(taken) != fmt.Sprint(tc.taken) {
				t.Fatalf("taken %v, reply %q; want %v, %q", taken, got, tc.taken, tc.want)
			}
		})
	}
}
