// Package dashboard serves limitdb's live dashboard: one page on the
// metrics listener (/dashboard) that polls /dashboard/data.json every
// second and draws, without any build step or network access, each named
// policy's admitted, denied and shadow-denied requests over time, the
// limiter commands' decisions, the node's role and its replicas' lag, the
// cluster's state, a region's peers, and the top limited keys when an
// analytics view is given.
//
// The page shows keys (user ids, IP addresses), so it is off until the
// dashboard directive says yes, and every path under /dashboard (the page,
// its script, its data) asks for an ACL user's password with HTTP Basic
// authentication, as AUTH would check it; a user must be allowed INFO to
// see the page, and RL.TOP to see the top keys. Only when the default user
// needs no password (a new connection starts authenticated as it) is the
// page served without one, and then, under protected-mode, only to
// loopback clients, as the client port does.
//
// dashboard imports the command core and the families whose state it
// shows; nothing imports it but programs and tests.
package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/policy"
)

//go:embed assets
var assets embed.FS

// Analytics is the analytics view the page shows as top keys and
// history: View returns a JSON-encodable value, read once per poll.
type Analytics interface {
	View() any
}

// AnalyticsFunc is a function as an Analytics: Sources{Analytics:
// dashboard.AnalyticsFunc(rec.View)} wires any view.
type AnalyticsFunc func() any

// View implements Analytics.
func (f AnalyticsFunc) View() any { return f() }

// Sources is what the dashboard reads.
type Sources struct {
	Server   *command.Server
	Policies *policy.Store
	// Cluster is the node's cluster state; nil shows cluster mode off.
	Cluster func() clustering.Summary
	// Analytics is the top keys and per-policy history; nil: analytics
	// off, and the page says so and charts the policies' totals alone.
	Analytics Analytics
}

// The commands a user must be allowed to see the page, and its top keys.
const (
	pageCommand = "info"
	keysCommand = "rl.top"
)

// Handler serves the dashboard under /dashboard; mount it at both
// "/dashboard" and "/dashboard/".
type Handler struct{ src Sources }

// New returns the dashboard of src.
func New(src Sources) *Handler { return &Handler{src: src} }

// ServeHTTP answers 404 while the dashboard directive is off, 401 without
// valid credentials, 403 to a user the ACL does not allow INFO (or to a
// remote client of a server without passwords in protected mode), and
// otherwise the page, its assets or its data.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cfg := h.src.Server.Config()
	if !cfg.Dashboard {
		http.NotFound(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
	access, ok := h.authorize(w, r, cfg.ProtectedMode)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/dashboard") {
	case "", "/":
		h.asset(w, r, "index.html", "text/html; charset=utf-8")
	case "/app.js":
		h.asset(w, r, "app.js", "text/javascript; charset=utf-8")
	case "/style.css":
		h.asset(w, r, "style.css", "text/css; charset=utf-8")
	case "/data.json":
		hdr.Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.view(access))
	default:
		http.NotFound(w, r)
	}
}

// realm names what the browser's password prompt is for.
const realm = `Basic realm="limitdb dashboard", charset="UTF-8"`

// authorize finds the user the request is from and whether it may see
// the page; when not, it has answered.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, protected bool) (command.Access, bool) {
	srv := h.src.Server
	anon, open := srv.Anonymous()
	if open && protected && !loopback(r.RemoteAddr) {
		http.Error(w, "limitdb is in protected mode: no password is set for the default user, so the dashboard answers only loopback clients. "+
			"Set a password (requirepass or aclfile) or protected-mode no.", http.StatusForbidden)
		return command.Access{}, false
	}
	access := anon
	if user, pass, given := r.BasicAuth(); given {
		a, ok := srv.Login(user, pass)
		if !ok {
			w.Header().Set("WWW-Authenticate", realm)
			http.Error(w, "invalid username-password pair or user is disabled", http.StatusUnauthorized)
			return command.Access{}, false
		}
		access = a
	} else if !open {
		w.Header().Set("WWW-Authenticate", realm)
		http.Error(w, "authentication required: an ACL user's name and password", http.StatusUnauthorized)
		return command.Access{}, false
	}
	if !access.Allowed(pageCommand) {
		http.Error(w, "user "+access.User()+" has no permissions to run the 'info' command, which the dashboard shows", http.StatusForbidden)
		return command.Access{}, false
	}
	return access, true
}

// loopback reports whether a request's remote address is a loopback one.
func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name, ctype string) {
	b, err := fs.ReadFile(assets, "assets/"+name) // not assets.ReadFile: archtest reads a method call on package state as a write
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}
