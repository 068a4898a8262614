//go:build unix

package command

import (
	"strings"
	"syscall"

	"github.com/limitdb/limitdb/engine"
)

func infoCPU(_ *Server, _ *engine.Engine, b *strings.Builder) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	infoLine(b, "used_cpu_sys", fmtSeconds(ru.Stime.Nano()))
	infoLine(b, "used_cpu_user", fmtSeconds(ru.Utime.Nano()))
}
