package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/rls"
)

// Envoy's rate limit service: a gRPC listener beside the RESP one, off
// until grpc-port is set, answering from the same keyspace.

// configureRLS applies the rls-* directives to the node's rate limit
// service, and makes it refuse to charge on a read-only replica, as the
// RESP side refuses writes there: a replica's counters are its primary's,
// and a charge of its own would part from them. A replica in a cluster
// refuses nothing itself: it owns no slot, so its charges go to the
// primaries that own them (rls_charge.go).
func (n *Node) configureRLS(cfg config.Config) {
	s := n.rls
	s.SetResponseHeaders(cfg.RLSResponseHeaders)
	s.SetHeaderNames(cfg.RLSHeaderLimit, cfg.RLSHeaderRemaining, cfg.RLSHeaderReset)
	s.SetAllOrNothing(cfg.RLSAllOrNothing)
	s.SetStopIncrementWhenOverLimit(cfg.RLSStopIncrementWhenOverLimit)
	s.SetShadowMode(cfg.RLSShadowMode)
	s.SetQuotaMode(cfg.RLSQuotaMode)
	s.SetNearLimitRatio(float32(cfg.RLSNearLimitRatio))
	s.SetMergeDomains(cfg.RLSMergeDomainConfig)
	s.SetMaxConfigBytes(cfg.RLSConfigMaxBytes)
	if cfg.ClusterEnabled == "yes" {
		s.SetReadOnly(nil)
	} else {
		s.SetReadOnly(n.cmds.ReadOnly)
	}
}

// StartRLS loads the rules of rls-config-dir into the node's rate limit
// service and watches the directory every second of the engine's clock
// until Close (a broken edit keeps the last good rules and is logged).
// Without the directive every request is OK. Calls after the first return
// the first's error: a directory that does not load at start-up is an
// error, so the server refuses to start without its limits.
func (n *Node) StartRLS() error {
	n.rlsOnce.Do(func() {
		dir := n.Config().RLSConfigDir
		if dir == "" {
			return
		}
		if n.rlsErr = n.rls.LoadDir(dir, n.logger); n.rlsErr != nil {
			return
		}
		go n.rls.Watch(n.done, rls.DefaultPoll, n.Engine().Clock())
	})
	return n.rlsErr
}

// RLS is the node's Envoy rate limit service, which gRPC, HTTP and
// RL.SHOULD all answer from.
func (n *Node) RLS() *rls.Service { return n.rls }

// StartGRPC listens on bind and grpc-port and serves Envoy's rate limit
// service there until Close; it does nothing when grpc-port is 0. It
// returns the listener's address (nil when off). A rules directory that
// does not load stops it before it listens.
func (n *Node) StartGRPC() (net.Addr, error) {
	cfg := n.Config()
	if cfg.GRPCPort == 0 {
		return nil, nil
	}
	if err := n.StartRLS(); err != nil {
		return nil, err
	}
	tc, err := n.GRPCTLSConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.GRPCPort)))
	if err != nil {
		return nil, err
	}
	go n.serveGRPC(ln, tc)
	return ln.Addr(), nil
}

// GRPCTLSConfig is the TLS configuration of the gRPC port, nil for plain
// text: the tls-* directives' certificates and client certificate policy
// (as the RESP TLS port uses them) when grpc-tls is yes, or auto with
// tls-cert-file and tls-key-file set.
func (n *Node) GRPCTLSConfig() (*tls.Config, error) {
	cfg := n.Config()
	switch cfg.GRPCTLS {
	case "no":
		return nil, nil
	case "yes":
	default: // auto
		if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
			return nil, nil
		}
	}
	tc, err := n.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("grpc-tls: %w", err)
	}
	return tc, nil
}

// ServeGRPC serves Envoy's rate limit service on ln with the rules of
// rls-config-dir until Close, whatever grpc-port says (tests listen on
// 127.0.0.1:0 themselves).
func (n *Node) ServeGRPC(ln net.Listener) error {
	if err := n.StartRLS(); err != nil {
		ln.Close()
		return err
	}
	tc, err := n.GRPCTLSConfig()
	if err != nil {
		ln.Close()
		return err
	}
	return n.serveGRPC(ln, tc)
}

// serveGRPC serves on ln, over TLS with tc unless it is nil.
func (n *Node) serveGRPC(ln net.Listener, tc *tls.Config) error {
	var opts []grpc.ServerOption
	security := "plain text"
	if tc != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
		security = "TLS, client certificates: " + n.Config().TLSAuthClients
	}
	srv := rls.NewServer(n.rls, opts...)
	if !n.register(ln, func() { n.grpc = append(n.grpc, srv) }) {
		return nil
	}
	if dir := n.Config().RLSConfigDir; dir != "" {
		n.logger.Printf("Envoy rate limit service (gRPC, %s) on %s: %d domains from %s", security, ln.Addr(), len(n.rls.Rules().Domains()), dir)
	} else {
		n.logger.Printf("Envoy rate limit service (gRPC, %s) on %s: no rls-config-dir, every request is OK", security, ln.Addr())
	}
	if err := srv.Serve(ln); err != nil {
		select {
		case <-n.done:
			return nil
		default:
			return fmt.Errorf("grpc: %w", err)
		}
	}
	return nil
}

// rlsCommands gives RL.SHOULD and INFO rls the node's rate limit service,
// as the envoy family's Service.
type rlsCommands struct{ svc *rls.Service }

func (r rlsCommands) ShouldRateLimit(user, domain string, entries []envoy.Entry, hits uint64, now int64) (envoy.Status, error) {
	d := &rlcommon.RateLimitDescriptor{HitsAddend: wrapperspb.UInt64(hits)}
	for _, e := range entries {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value})
	}
	resp, err := r.svc.DecideFor(user, &rlspb.RateLimitRequest{Domain: domain, Descriptors: []*rlcommon.RateLimitDescriptor{d}}, now)
	if err != nil {
		return envoy.Status{}, errors.New(status.Convert(err).Message())
	}
	st := resp.Statuses[0]
	out := envoy.Status{Over: st.Code == rlspb.RateLimitResponse_OVER_LIMIT, Remaining: st.LimitRemaining,
		OverallOver: resp.OverallCode == rlspb.RateLimitResponse_OVER_LIMIT}
	if st.CurrentLimit != nil {
		out.HasLimit, out.RequestsPerUnit, out.ResetAfter = true, st.CurrentLimit.RequestsPerUnit, st.DurationUntilReset.GetSeconds()
	}
	return out, nil
}

func (r rlsCommands) RuleStats() []rls.RuleStats { return r.svc.RuleStats() }

// StartRLSHTTP listens on bind and rls-http-port and serves the rate limit
// service's HTTP side there (POST /json, GET /healthcheck, GET /rlconfig,
// as envoyproxy/ratelimit) until Close; it does nothing when rls-http-port
// is 0. It returns the listener's address (nil when off).
func (n *Node) StartRLSHTTP() (net.Addr, error) {
	cfg := n.Config()
	if cfg.RLSHTTPPort == 0 {
		return nil, nil
	}
	if err := n.StartRLS(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.RLSHTTPPort)))
	if err != nil {
		return nil, err
	}
	go n.serveRLSHTTP(ln)
	return ln.Addr(), nil
}

// ServeRLSHTTP serves the rate limit service's HTTP side on ln until Close,
// whatever rls-http-port says.
func (n *Node) ServeRLSHTTP(ln net.Listener) error {
	if err := n.StartRLS(); err != nil {
		ln.Close()
		return err
	}
	return n.serveRLSHTTP(ln)
}

func (n *Node) serveRLSHTTP(ln net.Listener) error {
	// A slow client's headers must not hold a connection forever.
	srv := &http.Server{Handler: n.rls.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: n.logger}
	if !n.register(ln, func() { n.rlsHTTP = append(n.rlsHTTP, srv) }) {
		return nil
	}
	n.logger.Printf("Envoy rate limit service (HTTP /json, /healthcheck, /rlconfig) on %s", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("rls http: %w", err)
	}
	return nil
}
