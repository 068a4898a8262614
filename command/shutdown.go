package command

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Prepare loads the ACL users and the limits from the configuration. Serve
// calls it; callers may call it first to fail before listening (a bad
// aclfile stops start-up).
func (s *Server) Prepare() error {
	s.guard.once.Do(func() {
		s.loadLimits(s.Config().Limits)
		s.guard.prepErr = s.loadACL()
	})
	return s.guard.prepErr
}

// SecurityWarnings lists what an operator should know about how exposed the
// configuration is; the caller logs them at start-up.
func (s *Server) SecurityWarnings() []string {
	cfg := s.Config()
	var out []string
	if !bindIsLoopback(cfg.Bind) && !s.authRequired() {
		if cfg.ProtectedMode {
			out = append(out, fmt.Sprintf("WARNING: listening on %s with no password: protected mode is on, so only loopback clients will be accepted. "+
				"Set --requirepass or --aclfile to serve the network.", cfg.Bind))
		} else {
			out = append(out, fmt.Sprintf("WARNING: listening on %s with NO PASSWORD and protected mode OFF: anyone who can reach this port can read, change and flush every limit. "+
				"Set --requirepass or --aclfile.", cfg.Bind))
		}
	}
	if cfg.TLSPort != 0 && cfg.TLSAuthClients == "no" && !s.authRequired() {
		out = append(out, "WARNING: TLS port without client certificates or a password: TLS encrypts, but lets anyone in.")
	}
	return out
}

// bindIsLoopback reports whether every address in a bind list is loopback.
func bindIsLoopback(bind string) bool {
	for _, h := range strings.Fields(bind) {
		if h == "localhost" {
			continue
		}
		ip := net.ParseIP(strings.TrimPrefix(h, "-"))
		if ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// ShutdownGrace bounds how long SHUTDOWN and SIGTERM wait for in-flight
// commands before closing the remaining connections.
const ShutdownGrace = 5 * time.Second

// Shutdown stops the server gracefully: it stops accepting, lets every
// connection finish the commands it has already received and flush their
// replies (waiting at most grace), then calls OnShutdown(save) - where the
// final snapshot is written - and closes. Serve returns once it is done,
// with OnShutdown's error if any.
func (s *Server) Shutdown(save bool, grace time.Duration) error {
	if err := s.Prepare(); err != nil {
		return err
	}
	if !s.shutting.CompareAndSwap(false, true) {
		<-s.done
		return nil
	}
	s.logger.Printf("shutting down: no new connections, finishing in-flight commands")
	s.serveMu.Lock()
	net := s.net
	s.serveMu.Unlock()
	if net != nil {
		deadline := time.Now().Add(grace)
		net.Drain(func() bool {
			time.Sleep(5 * time.Millisecond)
			return time.Now().Before(deadline)
		})
	}
	var err error
	if s.OnShutdown != nil {
		err = s.OnShutdown(save)
		if err != nil {
			s.logger.Printf("shutdown: %v", err)
			s.guard.shutErr.Store(&err)
		}
	}
	s.Close()
	return err
}

// shutdownErr is what Serve returns after a Shutdown.
func (s *Server) shutdownErr() error {
	if p := s.guard.shutErr.Load(); p != nil {
		return *p
	}
	return nil
}
