package clustering

import (
	"bufio"
	"net"
	"strconv"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/resp"
)

// MIGRATE moves keys to another limitdb: DUMP here, RESTORE there, DEL
// here, with Redis 7's arguments, replies and errors. It dials the target
// for each call (Redis keeps the connection for 10 s), and runs on its
// client's connection as Redis runs it on its only thread: the
// connection's event loop waits for the target, at most timeout ms per
// step. No shard lock is held across the network: the payloads are read,
// the target is written to and read, then the keys it took are deleted.
// In a cluster, the keys' migrating slots are frozen meanwhile, so that
// what is deleted is what was sent.

func (f *Family) migrateCommand() *command.Command {
	return &command.Command{Name: "migrate", Arity: -6, Flags: command.FlagWrite | command.FlagNoMulti | command.FlagDangerous,
		FirstKey: 3, LastKey: 3, Step: 1, Keys: migrateKeys, KeyArgs: migrateKeys,
		Group: "generic", Since: "0.2.0", Complexity: "O(N) where N is the size of the values",
		Summary: "Moves keys to another limitdb node: RESTORE there (RESTORE-ASKING in cluster mode) with their TTL, then deletes them here unless COPY; +NOKEY when none exists. " +
			"Not in MULTI or scripts, which would hold their shards through the network round trip.",
		Syntax:  `host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]`,
		Handler: f.cmdMigrate}
}

// migrateKeys lists MIGRATE's keys: the one at 3, or those after KEYS when
// it is "" (COMMAND GETKEYS, cluster slots); none when the arguments are
// wrong, which the handler answers.
func migrateKeys(args [][]byte) [][]byte {
	if len(args) < 6 {
		return nil
	}
	m, err := parseMigrate(args)
	if err != nil {
		return nil
	}
	return m.keys
}

// migrateArgs is a parsed MIGRATE.
type migrateArgs struct {
	addr           string
	keys           [][]byte
	db, timeout    int64 // timeout in ms
	copy, replace  bool
	auth           bool // AUTH password, or AUTH2 user password
	user, password string
}

// parseMigrate reads MIGRATE's arguments, with Redis's errors in Redis's
// order: the options first, then timeout and db.
func parseMigrate(args [][]byte) (migrateArgs, error) {
	m := migrateArgs{addr: net.JoinHostPort(string(args[1]), string(args[2])), keys: args[3:4]}
	for i := 6; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case command.EqualFold(args[i], "copy"):
			m.copy = true
		case command.EqualFold(args[i], "replace"):
			m.replace = true
		case command.EqualFold(args[i], "auth") && more >= 1:
			m.auth, m.password = true, string(args[i+1])
			i++
		case command.EqualFold(args[i], "auth2") && more >= 2:
			m.auth, m.user, m.password = true, string(args[i+1]), string(args[i+2])
			i += 2
		case command.EqualFold(args[i], "keys"):
			if len(args[3]) != 0 {
				return m, command.WireError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
			}
			m.keys = args[i+1:]
			i = len(args)
		default:
			return m, command.ErrSyntax
		}
	}
	var err error
	if m.timeout, err = command.ParseInt(args[5]); err != nil {
		return m, err
	}
	if m.db, err = command.ParseInt(args[4]); err != nil {
		return m, err
	}
	if m.timeout <= 0 {
		m.timeout = 1000
	}
	return m, nil
}

// migrating is one key on its way: its payload and the ttl to give it.
type migrating struct {
	key, payload []byte
	pttl         int64
}

// cmdMigrate waits for another server, up to its timeout: the connections
// that share the client's event loop are served meanwhile (RunLong).
func (f *Family) cmdMigrate(c *command.Client, args [][]byte) {
	c.RunLong(func() { f.migrate(c, args) })
}

func (f *Family) migrate(c *command.Client, args [][]byte) {
	m, err := parseMigrate(args)
	if err != nil {
		c.Error(err)
		return
	}
	// A key moves whole: no command on its slot runs between the read
	// and the deletion (route.go).
	defer f.cs.freeze(m.keys)()
	now := c.Now()
	batch, err := readMigrating(c, m.keys, now)
	switch {
	case err != nil:
		c.Error(err)
		return
	case len(batch) == 0:
		c.Simple("NOKEY")
		return
	case m.db != 0:
		// A target is a limitdb, whose SELECT refuses any other database:
		// refused here, as a failed SELECT would not stop the RESTOREs
		// pipelined behind it.
		c.Err("ERR DB index is out of range")
		return
	}
	taken, reply := sendRestores(m, batch, f.cs.on)
	if !m.copy {
		// The same path as DEL: the change stream, replicas and the AOF
		// see each deletion.
		for i, took := range taken {
			if took {
				c.Engine().Delete(batch[i].key, now)
			}
		}
	}
	if reply != "" {
		c.Err(reply)
		return
	}
	c.OK()
}

// readMigrating reads the payload and PTTL of each key that exists.
func readMigrating(c *command.Client, keys [][]byte, now int64) ([]migrating, error) {
	var batch []migrating
	for _, k := range keys {
		p, expire, ok, err := readDump(c.Engine(), k, now)
		if err != nil {
			return nil, err
		}
		if ok {
			ttl := int64(0)
			if expire != 0 {
				ttl = command.PTTL(expire, now) // rounded up: a limiter never expires early on the target
			}
			batch = append(batch, migrating{key: k, payload: p, pttl: ttl})
		}
	}
	return batch, nil
}

// sendRestores sends AUTH and one RESTORE per key to the target in one
// write (no SELECT: the database is 0, the only one) and reads their
// replies, each within the timeout. It answers which keys the target took,
// and the error MIGRATE answers ("" for none), in Redis's words.
func sendRestores(m migrateArgs, batch []migrating, cluster bool) (taken []bool, reply string) {
	timeout := time.Duration(m.timeout) * time.Millisecond
	conn, err := net.DialTimeout("tcp", m.addr, timeout)
	if err != nil {
		return nil, "IOERR error or timeout connecting to the client"
	}
	defer conn.Close()
	w := resp.NewWriter(conn)
	writeRestores(w, m, batch, cluster)
	conn.SetWriteDeadline(time.Now().Add(timeout))
	if err := w.Flush(); err != nil {
		return nil, "IOERR error or timeout writing to target instance"
	}
	br := bufio.NewReader(conn)
	return readRestoreReplies(m.auth, len(batch), func() (resp.Reply, error) {
		conn.SetReadDeadline(time.Now().Add(timeout))
		return resp.ReadReply(br)
	})
}

// writeRestores buffers MIGRATE's commands to the target in w.
func writeRestores(w *resp.Writer, m migrateArgs, batch []migrating, cluster bool) {
	command := func(args ...[]byte) {
		w.Array(len(args))
		for _, a := range args {
			w.Bulk(a)
		}
	}
	switch {
	case m.auth && m.user != "":
		command([]byte("AUTH"), []byte(m.user), []byte(m.password))
	case m.auth:
		command([]byte("AUTH"), []byte(m.password))
	}
	verb := []byte("RESTORE")
	if cluster {
		verb = []byte("RESTORE-ASKING")
	}
	for _, b := range batch {
		args := [][]byte{verb, b.key, strconv.AppendInt(nil, b.pttl, 10), b.payload}
		if m.replace {
			args = append(args, []byte("REPLACE"))
		}
		command(args...)
	}
}

// readRestoreReplies reads AUTH's reply (when sent) and n RESTOREs'. An
// AUTH error fails every key and is the one reported; otherwise the first
// RESTORE error is reported, and the keys the target took are taken all
// the same, as in Redis.
func readRestoreReplies(auth bool, n int, read func() (resp.Reply, error)) (taken []bool, reply string) {
	const ioErr = "IOERR error or timeout reading to target instance"
	var failed string
	if auth {
		r, err := read()
		if err != nil {
			return nil, ioErr
		}
		if r.IsError() {
			failed = r.Line
		}
	}
	authFailed := failed != ""
	taken = make([]bool, n)
	for i := range taken {
		r, err := read()
		if err != nil {
			return taken, ioErr
		}
		switch {
		case authFailed:
		case r.IsError():
			if failed == "" {
				failed = r.Line
			}
		default:
			taken[i] = true
		}
	}
	if failed != "" {
		return taken, "ERR Target instance replied with error: " + failed
	}
	return taken, ""
}
