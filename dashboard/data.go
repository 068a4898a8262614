package dashboard

import (
	"net"
	"runtime"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/clustering"
)

// View is what /dashboard/data.json serves: the figures of one instant.
// Counters are totals since start; the page charts the differences
// between successive polls.
type View struct {
	TimeMS   int64              `json:"time_ms"` // the server's clock, Unix milliseconds
	User     string             `json:"user"`    // whom the page is served to
	Node     Node               `json:"node"`
	Policies []Policy           `json:"policies"`
	Commands []CommandCount     `json:"commands"` // the limiter commands' decisions
	Cluster  clustering.Summary `json:"cluster"`
	// Region is INFO regions' lines when the node is in a region; absent
	// otherwise.
	Region []Field `json:"region,omitempty"`
	// Analytics is the analytics view; null when analytics is off or the
	// user may not run RL.TOP, AnalyticsNote saying which.
	Analytics     any    `json:"analytics"`
	AnalyticsNote string `json:"analytics_note,omitempty"`
}

// Node is the node's identity, load and replication.
type Node struct {
	Role          string    `json:"role"` // master or slave, as ROLE says
	Version       string    `json:"version"`
	UptimeSeconds int64     `json:"uptime_seconds"`
	Keys          int       `json:"keys"`
	Clients       int       `json:"clients"`
	MemoryBytes   uint64    `json:"memory_bytes"`
	ReplOffset    int64     `json:"repl_offset"`
	Master        *Master   `json:"master,omitempty"` // on a replica
	Replicas      []Replica `json:"replicas"`         // on a primary
}

// Master is a replica's link to its primary (INFO replication).
type Master struct {
	Addr          string `json:"addr"`
	LinkUp        bool   `json:"link_up"`
	State         string `json:"state"`
	LastIOSeconds int64  `json:"last_io_seconds"` // -1: never
}

// Replica is one replica of a primary (INFO replication's slaveN line).
type Replica struct {
	Addr        string `json:"addr"`
	State       string `json:"state"`
	Offset      int64  `json:"offset"`
	LagSeconds  int64  `json:"lag_seconds"`  // since its last acknowledgement
	BehindBytes int64  `json:"behind_bytes"` // of the stream it has not acknowledged
}

// Policy is one named policy and its counters (INFO limits' policy lines).
type Policy struct {
	Name         string `json:"name"`
	Algorithm    string `json:"algorithm"`
	Limit        int64  `json:"limit"`
	Period       string `json:"period"`
	Shadow       bool   `json:"shadow"`
	Admitted     int64  `json:"admitted"`
	Denied       int64  `json:"denied"`
	ShadowDenied int64  `json:"shadow_denied"` // what a shadow policy would have denied
}

// CommandCount is one limiter command's decisions.
type CommandCount struct {
	Command  string `json:"command"`
	Admitted int64  `json:"admitted"`
	Denied   int64  `json:"denied"`
}

// Field is one INFO line, name and value.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// view gathers the figures the page shows to access.
func (h *Handler) view(access command.Access) View {
	srv := h.src.Server
	now := srv.Clock().Now()
	v := View{TimeMS: now / 1e6, User: access.User(), Node: h.node(now), Policies: []Policy{}, Commands: []CommandCount{}}
	if h.src.Policies != nil {
		for _, p := range h.src.Policies.List() {
			v.Policies = append(v.Policies, Policy{Name: p.Name, Algorithm: string(p.Algorithm), Limit: p.Limit, Period: p.PeriodString(),
				Shadow: p.Shadow, Admitted: p.Admitted, Denied: p.Denied, ShadowDenied: p.ShadowDenied})
		}
	}
	for _, st := range srv.LimitStats() {
		v.Commands = append(v.Commands, CommandCount{Command: st.Command, Admitted: st.Admitted, Denied: st.Denied})
	}
	if h.src.Cluster != nil {
		v.Cluster = h.src.Cluster()
	}
	v.Region = region(srv.Info([]byte("regions")))
	switch {
	case h.src.Analytics == nil:
		v.AnalyticsNote = "analytics is off: top keys and history need it on"
	case !access.Allowed(keysCommand):
		v.AnalyticsNote = "user " + access.User() + " has no permissions to run the 'rl.top' command: top keys are hidden"
	default:
		if v.Analytics = h.src.Analytics.View(); v.Analytics == nil {
			v.AnalyticsNote = "analytics is off: top keys and history need it on (CONFIG SET analytics yes)"
		}
	}
	return v
}

func (h *Handler) node(now int64) Node {
	srv := h.src.Server
	st := srv.Replication().Status()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := Node{Role: "master", Version: command.Version, UptimeSeconds: (now - srv.Started().UnixNano()) / 1e9,
		Keys: srv.Engine().Stats().Keys, Clients: srv.ConnectedClients(), MemoryBytes: ms.HeapAlloc,
		ReplOffset: st.Backlog.MasterReplOffset, Replicas: []Replica{}}
	for _, r := range st.Replicas {
		n.Replicas = append(n.Replicas, Replica{Addr: net.JoinHostPort(r.IP, strconv.Itoa(r.Port)), State: r.State,
			Offset: r.Offset, LagSeconds: r.Lag, BehindBytes: max(st.Backlog.MasterReplOffset-r.Offset, 0)})
	}
	if st.Replica {
		n.Role = "slave"
		n.Master = &Master{Addr: net.JoinHostPort(st.Link.Host, strconv.Itoa(st.Link.Port)), LinkUp: st.Link.Up,
			State: st.Link.State, LastIOSeconds: st.Link.LastIOSeconds}
	}
	return n
}

// region is INFO regions' lines, or nil when the server has no such
// section or is in no region ("region:" empty).
func region(info string) []Field {
	var out []Field
	inRegion := false
	for _, line := range strings.Split(info, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if name == "region" {
			inRegion = value != ""
		}
		out = append(out, Field{Name: name, Value: value})
	}
	if !inRegion {
		return nil
	}
	return out
}
