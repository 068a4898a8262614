package analytics

import "sync"

// History is one policy's or command's decisions over time: admitted,
// denied and shadow-denied requests per second over the last hour
// (HistorySeconds) and per minute over the last day (HistoryMinutes), in
// two fixed rings (43,200 and 34,560 bytes) that the newest instant
// rotates: a step older than its ring holds is gone, one not yet seen
// reads as zero. Time is Unix nanoseconds, given by the caller; a step
// earlier than the newest one (time going backwards) is added where it
// belongs if the ring still holds it. A second counts at most 2^32-1
// decisions of each kind.
type History struct {
	mu  sync.Mutex
	sec ring[uint32]
	min ring[uint64]
}

const (
	HistorySeconds = 3600 // seconds kept per second: an hour
	HistoryMinutes = 1440 // minutes kept per minute: a day
)

// Point is the decisions of one second or one minute. Admitted includes
// a shadow policy's would-be denials, as the policy's counters do.
type Point struct {
	Time         int64  `json:"time"` // Unix seconds at the start of the step
	Admitted     uint64 `json:"admitted"`
	Denied       uint64 `json:"denied"`
	ShadowDenied uint64 `json:"shadow_denied"`
}

func newHistory() *History {
	return &History{sec: newRing[uint32](HistorySeconds), min: newRing[uint64](HistoryMinutes)}
}

// add counts a, d and s decisions at now.
func (h *History) add(now int64, a, d, s uint64) {
	sec := floorDiv(now, 1e9)
	h.mu.Lock()
	h.sec.add(sec, a, d, s)
	h.min.add(floorDiv(sec, 60), a, d, s)
	h.mu.Unlock()
}

// Seconds returns the last count seconds up to the one holding now, oldest
// first (count at most HistorySeconds).
func (h *History) Seconds(now int64, count int) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sec.read(floorDiv(now, 1e9), count, 1)
}

// Minutes returns the last count minutes up to the one holding now, oldest
// first (count at most HistoryMinutes).
func (h *History) Minutes(now int64, count int) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.min.read(floorDiv(now, 60e9), count, 60)
}

// ring holds the counts of the last len(slots) steps up to head: step i
// is in slots[i mod len].
type ring[C uint32 | uint64] struct {
	head  int64
	slots [][3]C
}

func newRing[C uint32 | uint64](n int) ring[C] { return ring[C]{slots: make([][3]C, n)} }

func (r *ring[C]) add(step int64, a, d, s uint64) {
	n := int64(len(r.slots))
	switch {
	case step > r.head:
		if step-r.head >= n {
			clear(r.slots)
		} else {
			for i := r.head + 1; i <= step; i++ {
				r.slots[floorMod(i, n)] = [3]C{}
			}
		}
		r.head = step
	case step <= r.head-n:
		return
	}
	c := &r.slots[floorMod(step, n)]
	c[0] += C(a)
	c[1] += C(d)
	c[2] += C(s)
}

// read returns count steps ending at end, oldest first, each stamped with
// its start in seconds (step times width).
func (r *ring[C]) read(end int64, count int, width int64) []Point {
	n := int64(len(r.slots))
	if count > int(n) {
		count = int(n)
	}
	if count < 0 {
		count = 0
	}
	out := make([]Point, count)
	for i := range out {
		step := end - int64(count-1-i)
		p := Point{Time: step * width}
		if step <= r.head && step > r.head-n {
			c := r.slots[floorMod(step, n)]
			p.Admitted, p.Denied, p.ShadowDenied = uint64(c[0]), uint64(c[1]), uint64(c[2])
		}
		out[i] = p
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
