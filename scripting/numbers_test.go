package scripting

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/resp"
)

// numbersFile holds, for each operation on each input, the reply
// redis-server 7.0.15 gave: TestNumbersTableFromRedis writes it (with
// LIMITDB_UPDATE_NUMBERS=1) or checks it against a redis-server on PATH,
// and TestNumbersAsRedis checks the interpreter against it with no server.
const numbersFile = "testdata/numbers.tsv"

// numberOps are scripts run on each of numberInputs as ARGV[1]. A string
// is printed with "%.17g", which keeps every bit of a double; operations
// that fail on a non-number answer "error" through pcall, since their
// error's wording is gopher-lua's (docs/scripting.md).
var numberOps = []struct{ name, script string }{
	{"add", "local ok, v = pcall(function() return ARGV[1] + 0 end) if not ok then return 'error' end return string.format('%.17g', v)"},
	{"mul", "local ok, v = pcall(function() return 1 * ARGV[1] end) if not ok then return 'error' end return string.format('%.17g', v)"},
	{"unm", "local ok, v = pcall(function() return -ARGV[1] end) if not ok then return 'error' end return string.format('%.17g', v)"},
	{"reply", "local ok, v = pcall(function() return ARGV[1] + 0 end) if not ok then return 'error' end return v"},
	{"tostring", "local ok, v = pcall(function() return tostring(ARGV[1] + 0) end) if not ok then return 'error' end return v"},
	{"len", "local ok, v = pcall(function() return #tostring(ARGV[1] + 0) end) if not ok then return 'error' end return v"},
	{"floor", "local ok, v = pcall(math.floor, ARGV[1]) if not ok then return 'error' end return string.format('%.17g', v)"},
	{"eq", "return tostring(ARGV[1] == tonumber(ARGV[1])) .. ' ' .. tostring(ARGV[1] == ARGV[1])"},
	{"lt", "return tostring((pcall(function() return ARGV[1] < 1 end)))"},
	{"tonumber", "local v = tonumber(ARGV[1]) if v == nil then return 'nil' end return string.format('%.17g', v)"},
	{"tonumber10", "local v = tonumber(ARGV[1], 10) if v == nil then return 'nil' end return string.format('%.17g', v)"},
	{"tonumber16", "local v = tonumber(ARGV[1], 16) if v == nil then return 'nil' end return string.format('%.17g', v)"},
	{"tonumber2", "local v = tonumber(ARGV[1], 2) if v == nil then return 'nil' end return string.format('%.17g', v)"},
	{"tonumber8", "local v = tonumber(ARGV[1], 8) if v == nil then return 'nil' end return string.format('%.17g', v)"},
	{"tonumber36", "local v = tonumber(ARGV[1], 36) if v == nil then return 'nil' end return string.format('%.17g', v)"},
}

// numberInputs are the strings every operation reads: issue 32's cases,
// C's white space, signs, exponents, hexadecimal, infinities and NaNs,
// the edges of int64 and of a double, what Go reads and C does not.
var numberInputs = []string{
	"12", "00012", "0", "-0", "+5", "-5", "007", "08", "017", "10", "777", "-1",
	" 12", "12 ", "\t12\n", "\v12\f", "\r12\r", " ", "", "1 2", "12abc", "abc", "z", "ff", "--1", "+-1",
	"1e3", "1E3", "1e+3", "1e-3", "1e", "1e+", "1.", ".5", "-.5", ".", ".e5", "1.5", "0.1", "1.5e2", "1,5",
	"123456789012345", "-123456789012345", "1234567890123456", "9007199254740993",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "1e20", "-1e20", "1e308", "1e309", "-1e400", "1e-400", "-1e-400", "4.9e-324",
	"0x10", "0X1f", "-0x10", " -0x1A ", "0x", "0x ", "0xg", "0x1p4", "0x1P-1", "0x1p", "0x1.8", "0x.8", "0x1e2", "0x10000000000000001",
	"0b101", "0o17", "1_000", "٣",
	"inf", "-inf", "+INF", "Infinity", "-infinity", "infinit", "infx", "nan", "-nan", "NaN", "nan(123)", "nan()", "nan(",
	"1\x00x", "\x0012", "12\x00",
	"11111111111111111111111111111111111111111111111111111111111111111", "zzzzzzzzzzzzzz", "0x0x1",
}

// numberScripts are whole scripts, run with no arguments: numerals in the
// source, tonumber's base argument, the reply of a number past int64.
var numberScripts = []string{
	"return 0010", "return 0x10", "return 0xA", "return 1e2", "return .5 * 4",
	"return 2^63", "return -2^63", "return 2^63 - 1024", "return 1e20", "return -1e20", "return 0/0", "return 1/0", "return -1/0",
	"return 2^53 + 1", "return 9007199254740993", "return 3.99", "return -3.99",
	"return -'010'", "return '10' * '0x10'", "return '10' + '1e1'", "return math.max('10', '9')", "return math.floor(' 7.5 ')",
	"return tonumber('10', '16')", "return tonumber('10', 16.9)", "return tonumber('10', 2^32 + 16)", "return tonumber('10', nil)",
	"return tonumber('10', 1)", "return tonumber('10', 37)", "return tonumber('10', 0/0)", "return tonumber('10', 'x')",
	"return tonumber('10', {})", "return tonumber(nil, 16)", "return tonumber()", "return tonumber(nil)", "return tonumber(true)",
	"return tonumber({})", "return tonumber(10, 16)", "return tonumber(1e15, 16)", "return tonumber(255.5, 16)",
	"return tonumber(-1, 16)", "return tonumber('0x10', 10)", "return tonumber('0x10', 16)", "return tonumber('1e1', 16)",
	"return tostring(tonumber('-1', 16))", "return tostring(tonumber('-0', 16))", "return tostring(tonumber('  1f  ', 16))",
	"return '10' == 10", "return tostring('10' == 10)", "return #tostring('1e2' + 0)", "return ('1e1' + 0) .. ''",
	// library arguments that must be integers take a numeric string
	"return ('x'):rep('3')", "return ('x'):rep(' 0x2 ')", "return ('hello'):sub('2')", "return ('hello'):sub('2', '-0x2')",
	"return string.char('65', '0x42')", "return ('abc'):byte('2')", "return table.concat({1, 2, 3}, ',', '2')",
	"return ('x'):rep('1e1')", "return ('hello'):sub('00002')",
	"return pcall(string.rep, 'x', 'three')", "return pcall(string.char, '0b1')",
}

// numberRow is one line of numbersFile: an operation on an input (or
// "script" and a whole script), and Redis's reply in RESP.
type numberRow struct{ op, input, reply string }

// numberCases is every script to run, with its ARGV, in the table's order.
func numberCases() []numberRow {
	var rows []numberRow
	for _, op := range numberOps {
		for _, in := range numberInputs {
			rows = append(rows, numberRow{op: op.name, input: in})
		}
	}
	for _, s := range numberScripts {
		rows = append(rows, numberRow{op: "script", input: s})
	}
	return rows
}

// script is the row's script and its ARGV.
func (r numberRow) script() (string, [][]byte) {
	if r.op == "script" {
		return r.input, nil
	}
	for _, op := range numberOps {
		if op.name == r.op {
			return op.script, [][]byte{[]byte(r.input)}
		}
	}
	panic("no operation " + r.op)
}

func readNumbersFile(t *testing.T) []numberRow {
	t.Helper()
	b, err := os.ReadFile(numbersFile)
	if err != nil {
		t.Fatal(err)
	}
	var rows []numberRow
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("%s:%d: %d fields, want 3", numbersFile, i+1, len(f))
		}
		in, err1 := strconv.Unquote(f[1])
		reply, err2 := strconv.Unquote(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s:%d: not Go-quoted strings", numbersFile, i+1)
		}
		rows = append(rows, numberRow{op: f[0], input: in, reply: reply})
	}
	return rows
}

// TestNumbersAsRedis: every operation of numbersFile answers on limitdb's
// interpreter what it answered on redis-server, byte for byte; the file
// holds every case numberCases makes, no more.
func TestNumbersAsRedis(t *testing.T) {
	rows := readNumbersFile(t)
	cases := numberCases()
	if len(rows) != len(cases) {
		t.Fatalf("%s has %d rows, numberCases %d: regenerate it (TestNumbersTableFromRedis)", numbersFile, len(rows), len(cases))
	}
	if len(rows) < 200 {
		t.Fatalf("%d rows, want at least 200", len(rows))
	}
	r, c := NewRunner(Options{}), NewCache()
	for i, row := range rows {
		if row.op != cases[i].op || row.input != cases[i].input {
			t.Fatalf("row %d is %s %q, numberCases has %s %q: regenerate %s", i, row.op, row.input, cases[i].op, cases[i].input, numbersFile)
		}
		body, argv := row.script()
		s, err := c.Load([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		r.Run(s, nil, argv, replyCaller("+OK\r\n"), w, nil)
		w.Flush()
		if got := out.String(); got != row.reply {
			t.Errorf("%s %q: %q, Redis %q", row.op, row.input, got, row.reply)
		}
	}
}

// TestNumbersTableFromRedis runs numberCases on a redis-server 7.0 from
// PATH and checks numbersFile against its answers, or writes the file
// when LIMITDB_UPDATE_NUMBERS=1. Without redis-server 7.0 it skips.
func TestNumbersTableFromRedis(t *testing.T) {
	conn := startRedis(t)
	rd := bufio.NewReader(conn)
	cases := numberCases()
	for i := range cases {
		body, argv := cases[i].script()
		cmd := append([][]byte{[]byte("EVAL"), []byte(body), []byte("0")}, argv...)
		var req bytes.Buffer
		fmt.Fprintf(&req, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write(req.Bytes()); err != nil {
			t.Fatal(err)
		}
		rep, bulk, err := resp.ReadBulk(rd, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		reply := string(rep.Type) + rep.Line + "\r\n"
		if rep.Type == '$' && bulk != nil {
			reply += string(bulk) + "\r\n"
		}
		cases[i].reply = reply
	}
	if os.Getenv("LIMITDB_UPDATE_NUMBERS") == "1" {
		var b strings.Builder
		b.WriteString("# operation\tinput\treply of redis-server 7.0.15 (RESP), Go-quoted; written by TestNumbersTableFromRedis\n")
		for _, c := range cases {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", c.op, strconv.Quote(c.input), strconv.Quote(c.reply))
		}
		if err := os.WriteFile(numbersFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	rows := readNumbersFile(t)
	if len(rows) != len(cases) {
		t.Fatalf("%s has %d rows, numberCases %d: regenerate it with LIMITDB_UPDATE_NUMBERS=1", numbersFile, len(rows), len(cases))
	}
	for i, c := range cases {
		if rows[i] != c {
			t.Errorf("%s %q: the file says %q, redis-server %q", c.op, c.input, rows[i].reply, c.reply)
		}
	}
}

// startRedis starts a redis-server 7.0 from PATH on a Unix socket in a
// temporary directory, stopped when t ends, or skips t.
func startRedis(t *testing.T) net.Conn {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH")
	}
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !bytes.Contains(v, []byte("v=7.0.")) {
		t.Skipf("redis-server is not 7.0: %s", v)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--dir", dir, "--save", "", "--appendonly", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(strings.ToLower(sc.Text()), "ready to accept connections") {
				ready <- true
				break
			}
		}
		for sc.Scan() { // keep its stdout drained
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("redis-server ended before it was ready")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("redis-server not ready after 30 s")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestReadNumber: the reader's contract, case by case, with the sign of
// zeros and NaNs.
func TestReadNumber(t *testing.T) {
	negNaN := math.Copysign(math.NaN(), -1)
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"12", 12, true}, {"00012", 12, true}, {"-0", math.Copysign(0, -1), true}, {"+5", 5, true},
		{" \t\n\v\f\r12 \t\n\v\f\r", 12, true}, {"1e3", 1000, true}, {"1.", 1, true}, {".5", 0.5, true},
		{"0x10", 16, true}, {"-0x10", -16, true}, {"0x1p4", 16, true}, {"0x1.8", 1.5, true}, {"0x.8", 0.5, true},
		{"inf", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true}, {"nan", math.NaN(), true},
		{"-nan", negNaN, true}, {"nan(x_1)", math.NaN(), true}, {"1e400", math.Inf(1), true}, {"-1e-400", math.Copysign(0, -1), true},
		{"9223372036854775807", 9223372036854775808, true}, {"1\x00x", 1, true},
		{"", 0, false}, {" ", 0, false}, {"0x", 0, false}, {"0b101", 0, false}, {"1_000", 0, false}, {"1e", 0, false},
		{"1e+", 0, false}, {".", 0, false}, {"infinit", 0, false}, {"nan(", 0, false}, {"0x1p", 0, false}, {"1 2", 0, false},
		{"\x0012", 0, false}, {"٣", 0, false}, {"--1", 0, false},
	} {
		got, ok := ReadNumber(tc.in)
		same := got == tc.want || (math.IsNaN(got) && math.IsNaN(tc.want))
		if ok != tc.ok || (ok && (!same || math.Signbit(got) != math.Signbit(tc.want))) {
			t.Errorf("ReadNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzReadNumber: where Go's ParseFloat reads a string of digits, signs,
// points and exponents, ReadNumber reads the same number; it never panics
// on anything.
func FuzzReadNumber(f *testing.F) {
	for _, s := range numberInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ReadNumber(s)
		if strings.Trim(s, "0123456789.eE+-") != "" || strings.Contains(s, "_") {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if ne, isNum := err.(*strconv.NumError); !isNum || ne.Err != strconv.ErrRange {
				if ok {
					t.Errorf("ReadNumber(%q) = %v, where ParseFloat refuses it", s, got)
				}
				return
			}
		}
		if !ok || got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("ReadNumber(%q) = %v, %v; ParseFloat %v", s, got, ok, want)
		}
	})
}
