package cluster

import "testing"

func TestCRC16(t *testing.T) {
	// The check value the cluster specification gives for XMODEM.
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#04x, want 0x31c3", got)
	}
}

// The slots are redis-server 7.0.15's CLUSTER KEYSLOT answers (a node
// started with cluster-enabled yes).
func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"user:42", 15880},
		{"{user:42}", 15880},
		{"{user:42}:api", 15880},
		{"rl:{user:42}:login", 15880},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},
		{"foo{{bar}}zap", 4015},
		{"{bar", 4015},
		{"{}", 15257},
		{"a{b}c", 3300},
		{"foo{bar}{zap}", 5061},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := Slot([]byte(tc.key)); got != tc.want {
				t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
}
