package lease

import (
	"testing"
)

// FuzzDecode: no input makes Decode panic, and what it accepts encodes
// to a set that decodes again to the same leases, whose weights sum to Held.
func FuzzDecode(f *testing.F) {
	var s Set
	s.Acquire(t0, 5, 2, ms, "a", true)
	s.Acquire(t0, 5, 1, 3*ms, "job-7", true)
	f.Add(s.AppendBinary(nil))
	f.Add([]byte{0})
	f.Add([]byte{1, 2, 2, 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(got.AppendBinary(nil))
		if err != nil || again.Held() != got.Held() || again.Latest() != got.Latest() || again.Len() != got.Len() {
			t.Fatalf("re-decoded %+v %v, want %+v", again, err, got)
		}
		var held int64
		got.Each(func(l Lease) { held += l.Weight })
		if held != got.Held() {
			t.Fatalf("held %d, leases weigh %d", got.Held(), held)
		}
	})
}
