package pubsub_test

import (
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	connection "github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/pubsub"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/commandtest"
)

// newServer is a command layer with the pub/sub family, on a fake clock,
// and the connection family, whose PING, RESET and CLIENT see the
// subscribed mode.
func newServer(t testing.TB) *command.Server {
	t.Helper()
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), connection.New(), pubsub.New())
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
