package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, c, addr := startWithMetrics(t)
	c.ConfigResetStat(ctx) // command statistics are per process
	for i := 0; i < 4; i++ {
		c.Do(ctx, "CL.THROTTLE", "m", 1, 1, 60) // burst 1: two admitted, two denied
	}
	c.Set(ctx, "s", "v", 0)

	res, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	text := string(body)
	for _, want := range []string{
		`limitdb_requests_total{command="cl.throttle"} 4`,
		`limitdb_admitted_total{command="cl.throttle"} 2`,
		`limitdb_denied_total{command="cl.throttle"} 2`,
		`limitdb_request_duration_seconds_count{command="cl.throttle"} 4`,
		`limitdb_request_duration_seconds_bucket{command="cl.throttle",le="+Inf"} 4`,
		`limitdb_request_duration_seconds_bucket{command="set",le="4.194304"} 1`,
		"limitdb_keys 2",
		"limitdb_connected_clients 1",
		"limitdb_last_save_timestamp_seconds 0",
		"limitdb_snapshot_age_seconds ",
		"limitdb_memory_used_bytes ",
		"limitdb_replica 0",
		"limitdb_connected_replicas 0",
		"limitdb_replication_offset_bytes ",
		"go_goroutines ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
	if err := srv.Save(); err != nil {
		t.Fatal(err)
	}
	res, _ = http.Get("http://" + addr.String() + "/metrics")
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(body), "limitdb_last_save_timestamp_seconds 0\n") {
		t.Error("the last-save gauge did not move after a save")
	}
}
