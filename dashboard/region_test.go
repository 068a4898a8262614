package dashboard

import (
	"reflect"
	"testing"
)

// TestRegion: INFO regions' lines show when the node is in a region, and
// nothing shows for no section or an empty region.
func TestRegion(t *testing.T) {
	for _, tc := range []struct {
		info string
		want []Field
	}{
		{"", nil},
		{"# Regions\r\nregion:\r\n", nil},
		{"# Regions\r\nregion:eu\r\nregion_peers:1\r\npeer_us:addr=10.0.0.2:6379,state=ok,lag_ms=120\r\n",
			[]Field{{"region", "eu"}, {"region_peers", "1"}, {"peer_us", "addr=10.0.0.2:6379,state=ok,lag_ms=120"}}},
	} {
		if got := region(tc.info); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("region(%q) = %v, want %v", tc.info, got, tc.want)
		}
	}
}
