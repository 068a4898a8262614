package monitor_test

import (
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	connection "github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/monitor"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/commandtest"
)

// newServer is a command layer with the MONITOR family, on a fake clock,
// beside the families whose commands the tests run and watch: the
// connection commands (ECHO, RESET), the keyspace, scripts and CONFIG.
func newServer(t testing.TB) *command.Server {
	t.Helper()
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), connection.New(), keyspace.New(), scripts.New(), monitor.New(), admin.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// conn is a connection with no socket (commandtest.Conn).
type conn = commandtest.Conn

// dial opens a connection from addr on s.
func dial(t testing.TB, s *command.Server, addr string) *conn { return commandtest.Dial(t, s, addr) }
