// Package scripting runs Redis Lua scripts (EVAL, EVALSHA, FCALL) on
// github.com/yuin/gopher-lua, Lua 5.1 as in Redis: the script cache, the
// sandbox, the redis.* library and Redis's conversions between Lua values
// and RESP replies.
//
// It knows nothing of commands, keys or connections: a script's
// redis.call goes to the Caller the command layer gives Run, which runs
// the command and returns its reply in RESP; the script's result is written
// with a resp.Writer. scripting may import resp and clock; it must never
// import command, engine or server.
//
// # Conversions
//
// A command's reply becomes a Lua value (RESP2, or RESP3 after
// redis.setresp(3)):
//
//	integer             number
//	bulk string         string
//	null bulk, null     false (RESP2) / nil (RESP3 null)
//	array               table (a null element: false)
//	status              table {ok = "..."}
//	error               table {err = "..."}: redis.call raises it,
//	                    redis.pcall returns it
//	RESP3 map           table {map = {k = v, ...}}
//	RESP3 set           table {set = {member = true, ...}}
//	RESP3 double        table {double = number}
//	RESP3 boolean       boolean
//	RESP3 big number    table {big_number = "..."}
//	RESP3 verbatim      table {verbatim_string = {format = "txt", string = "..."}}
//
// A script's result becomes the reply:
//
//	number              integer, truncated toward zero (3.99 -> 3)
//	string              bulk string
//	true                integer 1 (RESP2) / boolean (RESP3 client)
//	false, nil          null
//	table {err = s}     error s
//	table {ok = s}      status s
//	table {map = t}     map (RESP3 client) / flat array of pairs (RESP2)
//	table {set = t}     set (RESP3) / array of members (RESP2)
//	table {double = n}  double (RESP3) / bulk string (RESP2)
//	table {big_number = s}, {verbatim_string = {...}}  as RESP3 / bulk
//	other table         array of t[1], t[2], ... up to the first nil
//
// redis.call's arguments must be strings or numbers; a number is
// formatted as Lua's %.17g, as Redis does.
//
// # Sandbox
//
// Scripts see the globals Redis 7 gives them: the base library without
// print, dofile, loadfile, require, module, setfenv, getfenv and newproxy;
// string, table, math, coroutine; redis (and server, its Valkey alias),
// cjson; KEYS and ARGV. Globals are read-only: assigning one fails with
// Redis's "Attempt to modify a readonly table", so nothing a script does
// reaches the next script. Reading a global nobody defined fails with
// Redis's "Script attempted to access nonexistent global variable".
//
// A run can be cancelled (busy-reply-threshold, SCRIPT KILL,
// script-memory-limit): the interpreter checks its context between
// instructions, and the library functions that make large values check it
// as they go. memory.go bounds the large strings and tables a run makes,
// results.go its results, stack and tracebacks as Redis's Lua 5.1 does.
package scripting
