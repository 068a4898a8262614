package command

import (
	"fmt"

	"github.com/limitdb/limitdb/config"
)

// SetConfig changes parameters at run time, all or none: each is parsed
// into a copy of the configuration, and only if every one is valid and
// mutable does the copy replace the running one, and the parts of the
// server the directives name are reloaded.
func (s *Server) SetConfig(pairs ...[2]string) error {
	if err := s.checkConfigNames(pairs); err != nil {
		return err
	}
	s.conf.mu.Lock()
	next := s.conf.cfg
	var reload []*config.Directive
	for _, p := range pairs {
		d := s.conf.directives.Lookup(p[0])
		if err := d.Set(&next, p[1]); err != nil {
			s.conf.mu.Unlock()
			return WireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", d.Name, err))
		}
		if d.Reload != config.ReloadNone {
			reload = append(reload, d)
		}
	}
	s.conf.cfg = next
	s.conf.mu.Unlock()
	for _, d := range reload {
		if err := s.reload(d.Reload); err != nil {
			return WireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", d.Name, err))
		}
	}
	return nil
}

// checkConfigNames checks the names CONFIG SET is given, in order, before
// any value, as Redis does: an unknown name, an immutable one or one given
// twice is the error, quoted as the client wrote it.
func (s *Server) checkConfigNames(pairs [][2]string) error {
	seen := make(map[*config.Directive]bool, len(pairs))
	for _, p := range pairs {
		d := s.conf.directives.Lookup(p[0])
		switch {
		case d == nil || d.Set == nil:
			return WireError(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", p[0]))
		case !d.Mutable:
			return WireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", p[0]))
		case seen[d]:
			return WireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - duplicate parameter", p[0]))
		}
		seen[d] = true
	}
	return nil
}

// reload redoes what a changed directive affects: what its owners
// registered with OnReload, in the order they did.
func (s *Server) reload(r config.Reload) error {
	for _, fn := range s.table.reloads[r] {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// registerReloads registers what the core redoes for the directives that
// configure the state it keeps; families register their own in Register.
func (s *Server) registerReloads() {
	t := s.table
	t.OnReload(config.ReloadACL, s.loadACL)
	t.OnReload(config.ReloadLimits, func() error {
		s.loadLimits(s.Config().Limits)
		return nil
	})
	t.OnReload(config.ReloadMemory, func() error {
		s.guard.mem.load(s)
		return nil
	})
	t.OnReload(config.ReloadNotify, s.loadNotify)
	t.OnReload(config.ReloadSlowlog, func() error {
		s.slow.configure(s.Config())
		return nil
	})
}
