package tests

import "testing"

// listMovesScript covers LMOVE, RPOPLPUSH and LMPOP with their options and
// errors, in the order Redis checks them.
var listMovesScript = [][]any{
	{"RPUSH", "l", "a", "b", "c"}, {"SET", "str", "v"}, {"SADD", "s", "m"},
	{"LMOVE", "l", "d", "LEFT", "UP"}, {"LMOVE", "l", "d", "UP", "LEFT"}, {"LMOVE", "nokey", "str", "LEFT", "RIGHT"},
	{"LMOVE", "str", "d", "LEFT", "RIGHT"}, {"LMOVE", "l", "str", "LEFT", "RIGHT"}, {"LMOVE", "l", "s", "left", "right"},
	{"LMOVE", "l", "d", "LEFT", "RIGHT"}, {"LMOVE", "l", "d", "RIGHT", "LEFT"}, {"LRANGE", "l", 0, -1}, {"LRANGE", "d", 0, -1},
	{"LMOVE", "l", "l", "LEFT", "RIGHT"}, {"LRANGE", "l", 0, -1}, {"LMOVE", "l", "l", "RIGHT", "RIGHT"}, {"LRANGE", "l", 0, -1},
	{"LMOVE", "l", "d", "LEFT", "LEFT"}, {"EXISTS", "l"}, {"LRANGE", "d", 0, -1},
	{"SET", "ttl", "x", "EX", 100}, {"RPUSH", "e", "only"}, {"EXPIRE", "e", 100}, {"LMOVE", "e", "e2", "LEFT", "LEFT"}, {"TTL", "e2"}, {"EXISTS", "e"},
	{"RPOPLPUSH", "d", "r"}, {"RPOPLPUSH", "d", "r"}, {"RPOPLPUSH", "d", "r"}, {"RPOPLPUSH", "d", "r"}, {"LRANGE", "r", 0, -1},
	{"RPOPLPUSH", "nokey", "r"}, {"RPOPLPUSH", "str", "r"}, {"RPOPLPUSH", "r", "str"}, {"RPOPLPUSH", "r", "r"}, {"LRANGE", "r", 0, -1},
	{"LMPOP", 0, "r", "LEFT"}, {"LMPOP", -1, "r", "LEFT"}, {"LMPOP", "x", "r", "LEFT"}, {"LMPOP", 2, "r", "LEFT"}, {"LMPOP", 1, "r", "MIN"},
	{"LMPOP", 1, "r", "LEFT", "COUNT", 0}, {"LMPOP", 1, "r", "LEFT", "COUNT", -2}, {"LMPOP", 1, "r", "LEFT", "COUNT", 1, "COUNT", 1},
	{"LMPOP", 1, "r", "LEFT", "COUNT"}, {"LMPOP", 1, "r", "LEFT", "x"},
	{"LMPOP", 2, "nokey", "str", "LEFT"}, {"LMPOP", 2, "nokey", "nokey2", "RIGHT"}, {"LMPOP", 3, "nokey", "r", "str", "LEFT"},
	{"LMPOP", 1, "r", "RIGHT", "COUNT", 2}, {"LMPOP", 1, "r", "left", "count", 10}, {"EXISTS", "r"},
	{"LMPOP", 1, "r", "LEFT"},
}

// TestListMovesMatchRedis sends listMovesScript to redis-server and to
// limitdb, in RESP2 and then RESP3, and wants the same replies.
func TestListMovesMatchRedis(t *testing.T) {
	t.Parallel()
	scriptMatchesRedis(t, listMovesScript)
}
