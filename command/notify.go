package command

import "github.com/limitdb/limitdb/config"

// Keyspace notifications, as Redis 7.0 sends them: a write names its
// event with Client.Notify, and while notify-keyspace-events has the
// event's class and K or E, the event goes out through the table's
// Publisher on __keyspace@0__:<key> (the event as the message) and
// __keyevent@0__:<event> (the key). Keys deleted by expiry and eviction
// are told by the engine (engine.KeyEvents). With notifications off a
// write pays one atomic load for them.

// Notify publishes event for key in class (config.Notify*) when
// notify-keyspace-events asks for that class; key may alias the
// command's arguments.
func (c *Client) Notify(class int, event string, key []byte) {
	if flags := c.srv.table.notify.Load(); flags&int32(class) != 0 {
		c.srv.notifyKeyspace(flags, event, key)
	}
}

// NotifyOn reports whether events of class are published now: for a
// command that would build its keys only to tell them.
func (c *Client) NotifyOn(class int) bool { return c.srv.table.notify.Load()&int32(class) != 0 }

// notifyKeyspace publishes event for key on the channels flags choose.
func (s *Server) notifyKeyspace(flags int32, event string, key []byte) {
	if flags&config.NotifyKeyspace != 0 {
		s.Publish("__keyspace@0__:"+string(key), []byte(event))
	}
	if flags&config.NotifyKeyevent != 0 {
		s.Publish("__keyevent@0__:"+event, key)
	}
}

// loadNotify reads notify-keyspace-events into the table's flags, which
// are 0 unless some event would reach a channel, and tells the engine to
// report expired and evicted keys only while those are published.
func (s *Server) loadNotify() error {
	flags := int32(s.Config().NotifyKeyspaceEvents)
	if flags&(config.NotifyKeyspace|config.NotifyKeyevent) == 0 {
		flags = 0
	}
	s.table.notify.Store(flags)
	if eng := s.env.Engine; eng != nil {
		if flags&(config.NotifyExpired|config.NotifyEvicted) != 0 {
			eng.SetKeyEvents(keyEvents{s})
		} else {
			eng.SetKeyEvents(nil)
		}
	}
	return nil
}

// keyEvents publishes the engine's expired and evicted keys. A replica
// sends none: as a Redis replica, it does not expire keys of its own
// accord (its primary's stream deletes them), and it applies its
// primary's changes without running commands, so it tells none of them.
type keyEvents struct{ s *Server }

func (k keyEvents) Expired(key []byte) { k.tell(config.NotifyExpired, "expired", key) }
func (k keyEvents) Evicted(key []byte) { k.tell(config.NotifyEvicted, "evicted", key) }

func (k keyEvents) tell(class int32, event string, key []byte) {
	flags := k.s.table.notify.Load()
	if flags&class == 0 || (k.s.stream != nil && k.s.stream.IsReplica()) {
		return
	}
	k.s.notifyKeyspace(flags, event, key)
}
