package client

import (
	"errors"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d    time.Duration
		want string
		ok   bool
	}{
		{time.Minute, "60", true},
		{1500 * time.Millisecond, "1500ms", true},
		{250 * time.Microsecond, "250us", true},
		{time.Nanosecond, "", false},
		{0, "", false},
		{-time.Second, "", false},
	}
	for _, tc := range cases {
		got, err := formatDuration(tc.d)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%v: %q, %v; want %q, ok=%v", tc.d, got, err, tc.want, tc.ok)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		wire []int64
		unit time.Duration
		want Result
	}{
		{[]int64{0, 10, 9, -1, 100}, time.Millisecond, Result{Limit: 10, Remaining: 9, ResetAfter: 100 * time.Millisecond}},
		{[]int64{1, 10, 0, 250, 900}, time.Millisecond, Result{Limited: true, Limit: 10, RetryAfter: 250 * time.Millisecond, ResetAfter: 900 * time.Millisecond}},
		{[]int64{1, 10, 0, -1, 900}, time.Millisecond, Result{Limited: true, Limit: 10, RetryAfter: Never, ResetAfter: 900 * time.Millisecond}},
		{[]int64{0, 3, 1, -1, 2000, 1000}, time.Millisecond, Result{Limit: 3, Remaining: 1, ResetAfter: 2 * time.Second, Delay: time.Second}},
		{[]int64{1, 3, 0, 500, 3000, -1}, time.Millisecond, Result{Limited: true, Limit: 3, RetryAfter: 500 * time.Millisecond, ResetAfter: 3 * time.Second}},
		{[]int64{0, 16, 15, -1, 2}, time.Second, Result{Limit: 16, Remaining: 15, ResetAfter: 2 * time.Second}},
	}
	for i, tc := range cases {
		got, err := decode(tc.wire, tc.unit)
		if err != nil || got != tc.want {
			t.Errorf("case %d: %+v, %v; want %+v", i, got, err, tc.want)
		}
	}
	if _, err := decode([]int64{0, 1, 2}, time.Second); !errors.Is(err, ErrReply) {
		t.Errorf("3 fields: err = %v, want ErrReply", err)
	}
}
