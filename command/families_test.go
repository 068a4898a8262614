package command_test

import (
	"io"
	"log"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/monitor"
	"github.com/limitdb/limitdb/command/persist"
	"github.com/limitdb/limitdb/command/pubsub"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/command/replicas"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// newServer is a command layer with the families the core's tests drive
// beside the built-in ones: the connection commands, the keyspace and
// data types, scripts, the rate-limit commands, Envoy's rate limit
// service's (with no service: RL.SHOULD refuses), pub/sub, MONITOR,
// administration and INFO, replication, cluster routing and
// administration, and snapshots and the append-only file, in the order the
// node registers them.
func newServer(cfg config.Config, eng *engine.Engine) *command.Server {
	return command.New(cfg, eng, log.New(io.Discard, "", 0), families()...)
}

// families returns new instances of the families newServer adds.
func families() []command.Family {
	return []command.Family{conn.New(), keyspace.New(), scripts.New(), ratelimit.New(), envoy.New(nil), pubsub.New(), monitor.New(), admin.New(), replicas.New(), clustering.New(), persist.New()}
}
