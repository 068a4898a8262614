package tests

import (
	"strings"
	"testing"
)

// infoField finds "name:value" in INFO text.
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v, true
		}
	}
	return "", false
}

func TestInfoLimitsCountsDecisions(t *testing.T) {
	ts := startServer(t)
	c := ts.client(t, 2)
	c.ConfigResetStat(ctx)   // command statistics are per process, shared by every test server
	for i := 0; i < 5; i++ { // burst 2: three admitted, two denied
		c.Do(ctx, "CL.THROTTLE", "k", 2, 1, 60)
	}
	c.Do(ctx, "CL.THROTTLE", "k", 2, 1, 60, 0) // a peek counts by its reply: 0 always fits
	c.Do(ctx, "GCRA", "g", 0, 1, 1)
	c.Do(ctx, "CL.THROTTLE", "k", 2, 0, 60) // an error decides nothing
	info := c.Info(ctx, "limits").Val()
	want := map[string]string{
		"limits_admitted":   "5",
		"limits_denied":     "2",
		"limit_cl.throttle": "admitted=4,denied=2",
		"limit_gcra":        "admitted=1,denied=0",
	}
	for k, w := range want {
		if got, _ := infoField(info, k); got != w {
			t.Errorf("%s = %q, want %q\n%s", k, got, w, info)
		}
	}
	if !strings.Contains(c.Info(ctx).Val(), "# Limits") {
		t.Error("the limits section is not among INFO's defaults")
	}
	c.ConfigResetStat(ctx)
	if got, _ := infoField(c.Info(ctx, "limits").Val(), "limits_admitted"); got != "0" {
		t.Errorf("after CONFIG RESETSTAT limits_admitted = %q", got)
	}
}
