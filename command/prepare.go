package command

import (
	"fmt"
	"net"
	"strings"
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
