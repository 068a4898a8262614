// Package twins holds the native twins of the limiter libraries' scripts:
// limitdb recognises the exact scripts of the libraries it was tested
// with, by the SHA1 of their text, and runs a Go implementation that gives
// what Redis's Lua gives: the same reply (down to Lua's "%.14g" in
// tostring), the same value left at the key (as redis.call's "%.17g"
// writes it), the same expiry, the same messages published. A twin reads
// a string as a number as Lua 5.1 does (scripting.ReadNumber), and replies
// an integer as Redis converts a Lua number (a command's INT64_MAX, which
// a script holds as 2^63, is INT64_MIN). Where the input is anything but
// the numbers the library sends (a value that is not a number, an
// infinity or a NaN, the wrong kind of key) a twin declines before
// changing anything and the script runs on the interpreter, errors and
// all.
//
// A twin reaches the server only through Host: the keyspace in the
// script's transaction, the batch's instant and PUBLISH. Whether a twin
// may run at all (the gates each redis.call would pass) is the caller's
// decision. The package imports neither the command layer nor the
// transport; internal/archtest holds it to that.
//
// Each twin is proved equal to the interpreter by a differential test, which
// runs the script's text on the interpreter through the command layer and so
// lives beside it: TestNativeEdgesMatchLua (command/scripts/twins_edges_test.go) for
// arguments and values other than plain numbers, TestNativeScriptsMatchLua
// and TestBottleneckNativeMatchesLua (tests/) through time.
package twins
