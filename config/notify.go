package config

import "strings"

// The classes of keyspace notifications, Redis 7.0's bits and letters
// (notify-keyspace-events): K and E choose the channels, the others the
// events sent on them.
const (
	NotifyKeyspace = 1 << 0  // K: __keyspace@0__:<key> carries the event
	NotifyKeyevent = 1 << 1  // E: __keyevent@0__:<event> carries the key
	NotifyGeneric  = 1 << 2  // g: DEL, EXPIRE, RENAME, COPY, ...
	NotifyString   = 1 << 3  // $
	NotifyList     = 1 << 4  // l
	NotifySet      = 1 << 5  // s
	NotifyHash     = 1 << 6  // h
	NotifyZSet     = 1 << 7  // z
	NotifyExpired  = 1 << 8  // x: a key deleted because its time to live ran out
	NotifyEvicted  = 1 << 9  // e: a key deleted by maxmemory's policy
	NotifyStream   = 1 << 10 // t: accepted; limitdb has no streams
	NotifyKeyMiss  = 1 << 11 // m: accepted; no keymiss events are sent
	NotifyModule   = 1 << 13 // d: accepted; limitdb has no modules
	NotifyNew      = 1 << 14 // n: accepted; no new events are sent

	// NotifyAll is A: every class but m and n, as in Redis.
	NotifyAll = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash | NotifyZSet |
		NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule
)

// ParseNotifyEvents reads notify-keyspace-events' letters into their
// bits; false on a letter Redis does not know. "" is none.
func ParseNotifyEvents(s string) (int, bool) {
	flags := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			flags |= NotifyAll
		case 'g':
			flags |= NotifyGeneric
		case '$':
			flags |= NotifyString
		case 'l':
			flags |= NotifyList
		case 's':
			flags |= NotifySet
		case 'h':
			flags |= NotifyHash
		case 'z':
			flags |= NotifyZSet
		case 'x':
			flags |= NotifyExpired
		case 'e':
			flags |= NotifyEvicted
		case 'K':
			flags |= NotifyKeyspace
		case 'E':
			flags |= NotifyKeyevent
		case 't':
			flags |= NotifyStream
		case 'm':
			flags |= NotifyKeyMiss
		case 'd':
			flags |= NotifyModule
		case 'n':
			flags |= NotifyNew
		default:
			return 0, false
		}
	}
	return flags, true
}

// FormatNotifyEvents is the letters CONFIG GET shows for flags, in
// Redis's order and spelling: A for every class it covers (then n is not
// shown, as Redis does not), then K, E and m.
func FormatNotifyEvents(flags int) string {
	var b strings.Builder
	if flags&NotifyAll == NotifyAll {
		b.WriteByte('A')
	} else {
		for _, c := range []struct {
			bit    int
			letter byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'}, {NotifyHash, 'h'},
			{NotifyZSet, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'}, {NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'}} {
			if flags&c.bit != 0 {
				b.WriteByte(c.letter)
			}
		}
	}
	if flags&NotifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if flags&NotifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if flags&NotifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}
