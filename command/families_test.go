package command_test

import (
	"io"
	"log"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with the families the core's tests drive
// beside the built-in ones: the script and rate-limit commands, in the
// order the node registers them.
func newServer(cfg config.Config, eng *engine.Engine) *command.Server {
	return command.New(cfg, eng, log.New(io.Discard, "", 0), scripts.New(), ratelimit.New())
}
