package node

import (
	"fmt"
	"net"
	"strconv"

	"github.com/limitdb/limitdb/rls"
)

// Envoy's rate limit service: a gRPC listener beside the RESP one, off
// until grpc-port is set, answering from the same keyspace.

// LoadRLSRules loads the rules of rls-config-dir; no directory, no rules.
func (n *Node) LoadRLSRules() (*rls.Config, error) {
	dir := n.Config().RLSConfigDir
	if dir == "" {
		return nil, nil
	}
	return rls.LoadDir(dir)
}

// StartGRPC listens on bind and grpc-port and serves Envoy's rate limit
// service there until Close; it does nothing when grpc-port is 0. It
// returns the listener's address (nil when off). A rules file that does
// not load stops it before it listens.
func (n *Node) StartGRPC() (net.Addr, error) {
	cfg := n.Config()
	if cfg.GRPCPort == 0 {
		return nil, nil
	}
	rules, err := n.LoadRLSRules()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.GRPCPort)))
	if err != nil {
		return nil, err
	}
	go n.serveGRPC(ln, rules)
	return ln.Addr(), nil
}

// ServeGRPC serves Envoy's rate limit service on ln with the rules of
// rls-config-dir until Close, whatever grpc-port says (tests listen on
// 127.0.0.1:0 themselves).
func (n *Node) ServeGRPC(ln net.Listener) error {
	rules, err := n.LoadRLSRules()
	if err != nil {
		ln.Close()
		return err
	}
	return n.serveGRPC(ln, rules)
}

func (n *Node) serveGRPC(ln net.Listener, rules *rls.Config) error {
	srv := rls.NewServer(rls.New(n.Engine(), rules))
	n.serveMu.Lock()
	select {
	case <-n.done: // closed before it started
		n.serveMu.Unlock()
		ln.Close()
		return nil
	default:
	}
	n.grpc = append(n.grpc, srv)
	n.serveMu.Unlock()
	if rules != nil {
		n.logger.Printf("Envoy rate limit service (gRPC) on %s: %d domains from %s", ln.Addr(), len(rules.Domains()), n.Config().RLSConfigDir)
	} else {
		n.logger.Printf("Envoy rate limit service (gRPC) on %s: no rls-config-dir, every request is OK", ln.Addr())
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
