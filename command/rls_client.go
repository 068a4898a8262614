package command

// The local clients through which Envoy's rate limit service charges its
// counters (RLS.CHARGE, the family command/envoy's): named "rls" in
// CLIENT LIST, and internal when no user is named, which the ACL's command
// rules do not restrict (auth.go).

// NewRLSClient returns a LocalClient for Envoy's rate limit service's
// charges (SetUser says as whom).
func (s *Server) NewRLSClient() *LocalClient {
	lc := s.NewLocalClient()
	lc.mu.Lock()
	lc.name = "rls"
	lc.mu.Unlock()
	lc.SetUser("")
	return lc
}

// SetUser makes lc run its commands as the ACL user user; "" is the
// server's own charges for a caller that names no user (Envoy's gRPC and
// HTTP requests), which the ACL's command rules do not restrict.
func (lc *LocalClient) SetUser(user string) {
	lc.setAuthed(true)
	lc.user, lc.internal = user, user == ""
}
