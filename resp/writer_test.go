package resp

import (
	"bytes"
	"testing"
)

// TestFlushKeepsTheBufferItNeeds: a small buffer is kept; one large flush
// gives its buffer back; a run of large flushes keeps it, up to a bound;
// a small flush after them gives it back again.
func TestFlushKeepsTheBufferItNeeds(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	flush := func(n int) int {
		w.Raw(bytes.Repeat([]byte{'x'}, n))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return cap(w.b)
	}
	for i, step := range []struct {
		n    int
		kept bool
	}{
		{100, true},
		{200 << 10, false},        // one large reply
		{200 << 10, true},         // a steady large flow
		{300 << 10, true},         // still
		{maxKeepLarge + 1, false}, // too large to keep
		{200 << 10, true},         // the run goes on
		{100, false},              // small again: the large buffer goes
		{100, true},
	} {
		if got := flush(step.n) > 0; got != step.kept {
			t.Errorf("step %d: flush of %d bytes kept the buffer: %v, want %v", i, step.n, got, step.kept)
		}
	}
	if out.Len() == 0 {
		t.Fatal("nothing written")
	}
}
