package command

import (
	"strconv"
	"time"
)

// Read-only views of the server's counters for exporters (metrics/): the
// same figures INFO renders.

func registerStats(t *Table) {
	t.registerInfo("cpu", 80, infoCPU)
}

func fmtSeconds(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 6, 64) }

// LastSave is when the last snapshot was written successfully, or the zero
// time when none has been since start (the snapshot-age gauge).
func (s *Server) LastSave() time.Time {
	p := &s.persist
	p.statMu.Lock()
	defer p.statMu.Unlock()
	return p.lastSave
}

// Started is when the server was created.
func (s *Server) Started() time.Time { return s.started }

// ConnectedClients is the number of open connections.
func (s *Server) ConnectedClients() int {
	return s.clients.count()
}

// ConnectionsReceived and CommandsProcessed are INFO stats' totals.
func (s *Server) ConnectionsReceived() int64 { return s.totalConns.Load() }

// CommandsProcessed counts every command read, refused ones included.
func (s *Server) CommandsProcessed() int64 { return s.totalCmds.Load() }
