// Package resp is the Redis wire format and nothing else: a Reader that
// parses commands in place while it enforces the protocol limits, a Writer
// of RESP2 and RESP3 replies, the protocol errors with Redis's texts, and
// ReadReply, which reads a reply's outcome for a server acting as a client
// (MIGRATE).
//
// It knows no command, connection or keyspace, and imports nothing from
// the project; the transport (server/) and the command layer (command/)
// build on it.
package resp
