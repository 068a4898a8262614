//go:build unix

package admin

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

func infoCPU(_ *engine.Engine, b *strings.Builder) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	command.InfoLine(b, "used_cpu_sys", fmtSeconds(ru.Stime.Nano()))
	command.InfoLine(b, "used_cpu_user", fmtSeconds(ru.Utime.Nano()))
}

func fmtSeconds(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 6, 64) }
