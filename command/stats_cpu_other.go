//go:build !unix

package command

import (
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// infoCPU has nothing to report where getrusage does not exist.
func infoCPU(_ *Server, _ *engine.Engine, _ *strings.Builder) {}
