package tests

import (
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/dashboard"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var dashboardRE = regexp.MustCompile(`dashboard at http://(\S+)/dashboard`)

// TestDashboardInChromium runs the binary with the dashboard on, loads it
// with RL.HIT on an enforcing and a shadow policy, and opens the page in
// headless Chromium as an ACL user allowed INFO (credentials in the URL,
// which Chromium keeps for the page's own requests): after the page has
// polled a few times, its DOM names both policies, charts each with
// points and a non-zero peak (the load runs meanwhile), shows the node's
// role and, analytics being on, the top limited keys the load made; the
// screenshot is a real picture. Without credentials the same URL answers
// 401 and shows nothing.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	chromium := need(t, "chromium")
	dir := t.TempDir()
	acl := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(acl, []byte("user default on >adminpw +@all\nuser viewer on >viewpw +info +rl.top\n"), 0o600))
	p := mustStart(t, dir, "--aclfile", acl, "--metrics-addr", "127.0.0.1:0", "--dashboard", "yes", "--analytics", "yes")
	var host string
	for deadline := time.Now().Add(20 * time.Second); host == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := dashboardRE.FindStringSubmatch(p.log.String()); m != nil {
			host = m[1]
		}
	}
	if host == "" {
		t.Fatalf("no dashboard address in the log:\n%s", p.log)
	}

	res, err := http.Get("http://" + host + "/dashboard/data.json")
	require.NoError(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("data.json without credentials: %d, want 401", res.StatusCode)
	}

	c := redis.NewClient(&redis.Options{Addr: p.addr, Username: "default", Password: "adminpw"})
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "login-attempts", "fixed_window", 5, "1m").Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "signup-trial", "gcra", 2, "1m", "SHADOW").Err())
	loadCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the load the page charts, until Chromium is done
		defer wg.Done()
		for i := 0; loadCtx.Err() == nil; i++ {
			pipe := c.Pipeline()
			for j := range 20 {
				key := "user:" + strconv.Itoa((i+j)%7)
				pipe.Do(loadCtx, "RL.HIT", "login-attempts", key)
				pipe.Do(loadCtx, "RL.HIT", "signup-trial", key)
			}
			pipe.Exec(loadCtx)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stop(); wg.Wait() }()

	shot := filepath.Join(dir, "dashboard.png")
	dom := chromiumDOM(t, chromium, "http://viewer:viewpw@"+host+"/dashboard/", shot)

	for _, want := range []string{`data-policy="login-attempts"`, `data-policy="signup-trial"`, `data-role="master"`, `>viewer<`, `signup-trial (shadow)`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s:\n%.4000s", want, dom)
		}
	}
	if m := regexp.MustCompile(`data-polls="(\d+)"`).FindStringSubmatch(dom); m == nil {
		t.Errorf("the page never drew its data:\n%.4000s", dom)
	} else if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Errorf("the page drew its data %d times, want at least 3", n)
	}
	box := regexp.MustCompile(`(?s)<div id="analytics">(.*?)</section>`).FindStringSubmatch(dom)
	top := regexp.MustCompile(`(?s)<div class="topgroup" data-group="login-attempts">.*?most denied.*?<td>(user:\d)</td><td class="num">(\d+)</td>`)
	if box == nil || top.FindStringSubmatch(box[1]) == nil {
		t.Errorf("the top keys do not show the load's most denied key:\n%.4000s", dom)
	}
	charts := regexp.MustCompile(`<div class="chart" data-policy="([^"]+)">.*?</svg>`).FindAllStringSubmatch(dom, -1)
	if len(charts) != 2 {
		t.Fatalf("%d charts, want 2:\n%.4000s", len(charts), dom)
	}
	for _, ch := range charts {
		points := regexp.MustCompile(`data-points="(\d+)"`).FindStringSubmatch(ch[0])
		peak := regexp.MustCompile(`data-max="([0-9.e+]+)"`).FindStringSubmatch(ch[0])
		path := regexp.MustCompile(`<path d="(M[^"]+)"[^>]*data-series="admitted"`).FindStringSubmatch(ch[0])
		if points == nil || points[1] == "0" || peak == nil || peak[1] == "0" || path == nil || !strings.Contains(path[1], "L") {
			t.Errorf("chart %s is empty (points %v, peak %v, admitted path %v):\n%s", ch[1], points, peak, path, ch[0])
		}
	}

	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, "the screenshot is not a PNG")
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 1000 {
		t.Errorf("screenshot is %v, want 1280x1000", b)
	}
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 10 {
		t.Errorf("the screenshot has %d colours: a blank page", len(colours))
	}
}

// chromiumDOM opens url in headless Chromium for 5 s of virtual time (the
// page's timers run, its requests complete) and returns the DOM then; with
// shot, it also saves a 1280x1000 screenshot there.
func chromiumDOM(t *testing.T, chromium, url, shot string) string {
	t.Helper()
	ctxRun, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "chromium"), "--virtual-time-budget=5000", "--window-size=1280,1000", "--dump-dom", url}
	if shot != "" {
		args = append(args, "--screenshot="+shot)
	}
	cmd := exec.CommandContext(ctxRun, chromium, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// TestDashboardShowsAnalytics: an analytics view handed to the dashboard
// (dashboard.Sources.Analytics) shows in the page as the top keys, in
// place of the note that analytics is off.
func TestDashboardShowsAnalytics(t *testing.T) {
	t.Parallel()
	chromium := need(t, "chromium")
	ts := startServer(t)
	require.NoError(t, ts.srv.CommandServer().SetConfig([2]string{"dashboard", "yes"}))
	view := func() any {
		return map[string]any{"login": map[string]any{
			"denied": []map[string]any{{"key": "user:1001", "count": 17}, {"key": "10.1.2.3", "count": 4}},
		}}
	}
	h := dashboard.New(dashboard.Sources{Server: ts.srv.CommandServer(), Policies: ts.srv.Policies(),
		Cluster: ts.srv.ClusterSummary, Analytics: dashboard.AnalyticsFunc(view)})
	web := httptest.NewServer(h)
	defer web.Close()
	dom := chromiumDOM(t, chromium, web.URL+"/dashboard/", "")
	box := regexp.MustCompile(`(?s)<div id="analytics">(.*?)</section>`).FindStringSubmatch(dom)
	if box == nil {
		t.Fatalf("no analytics box:\n%.4000s", dom)
	}
	for _, want := range []string{">login<", ">user:1001<", ">17<", ">10.1.2.3<"} {
		if !strings.Contains(box[1], want) {
			t.Errorf("the top keys lack %s:\n%s", want, box[1])
		}
	}
	if strings.Contains(dom, "analytics is off") {
		t.Error("the page says analytics is off while a view is given")
	}
}
