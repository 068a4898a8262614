package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/engine/limit"
)

// Builtin returns every directive limitdb knows. Each call builds a new
// set: nothing is shared between servers.
func Builtin() *Directives {
	ds := &Directives{}
	ds.Add(
		String("bind", "address to listen on (loopback by default)", false,
			func(c *Config) *string { return &c.Bind }),
		Int("port", "TCP port to listen on (0 picks a free one)", false, 0,
			func(c *Config) *int { return &c.Port }),
		String("dir", "directory for snapshots", false,
			func(c *Config) *string { return &c.Dir }),
		Bool("event-loop", "serve TCP connections from one epoll event loop per core (Linux; no: a goroutine per connection)", false,
			func(c *Config) *bool { return &c.EventLoop }),
		Int("shards", "keyspace shards, rounded up to a power of two (0: 256)", false, 0,
			func(c *Config) *int { return &c.Shards }),
		// Read-only answers to what redis-benchmark and client libraries ask at start-up.
		Fixed("databases", "1"),
	)
	ds.Add(clusterDirectives()...)
	ds.Add(security()...)
	ds.Add(persistence()...)
	ds.Add(limits()...)
	ds.Add(memory()...)
	ds.Add(observability()...)
	ds.Add(tls()...)
	ds.Add(policies()...)
	ds.Add(replication()...)
	ds.Add(appendOnly()...)
	ds.Add(rls()...)
	ds.Add(regions()...)
	ds.Add(Size("script-memory-limit", "bytes a running script may add to the server's memory before it is stopped (0: none)", true, 0,
		func(c *Config) *int64 { return &c.ScriptMemoryLimit }))
	for _, name := range []string{"busy-reply-threshold", "lua-time-limit"} {
		d := Int(name, "milliseconds a script runs before other clients get -BUSY and SCRIPT KILL may stop it", true, 0,
			func(c *Config) *int { return &c.BusyReplyThreshold })
		if name == "lua-time-limit" {
			d.AliasOf = "busy-reply-threshold"
		}
		ds.Add(d)
	}
	return ds
}

func security() []*Directive {
	return []*Directive{
		String("requirepass", "password for the default user (AUTH password)", true,
			func(c *Config) *string { return &c.RequirePass }).with(ReloadACL),
		String("aclfile", "file of ACL users: 'user NAME on >password +@read ...' (see docs/operations.md)", false,
			func(c *Config) *string { return &c.ACLFile }),
		Bool("protected-mode", "without a password, accept only loopback clients", true,
			func(c *Config) *bool { return &c.ProtectedMode }),
	}
}

// saveDirective is save: seconds between automatic snapshots. The empty
// string is Redis's spelling of "never" (CONFIG SET save ""), as 0 is.
func saveDirective() *Directive {
	d := Int("save", "seconds between automatic snapshots when anything changed (0 or \"\": never)", true, 0,
		func(c *Config) *int { return &c.Save })
	set := d.Set
	d.Set = func(c *Config, v string) error {
		if v == "" {
			c.Save = 0
			return nil
		}
		return set(c, v)
	}
	return d
}

func persistence() []*Directive {
	return []*Directive{
		saveDirective(),
		(&Directive{Name: "dbfilename", Help: "snapshot file name inside --dir (CONFIG SET only with enable-protected-configs)", Mutable: true,
			Get: func(c *Config) string { return c.DBFilename },
			Set: func(c *Config, v string) error {
				if v == "" || strings.ContainsRune(v, '/') || v == "." || v == ".." {
					return errors.New("dbfilename can't be a path, just a filename")
				}
				c.DBFilename = v
				return nil
			}}).protected(),
		{Name: "enable-protected-configs", Help: "whether CONFIG SET may change protected directives (dbfilename): no, yes, or local (loopback clients)",
			Get: func(c *Config) string { return c.EnableProtectedConfigs },
			Set: func(c *Config, v string) error {
				switch v = strings.ToLower(v); v {
				case "no", "yes", "local":
					c.EnableProtectedConfigs = v
					return nil
				}
				return fmt.Errorf("argument must be 'no', 'yes' or 'local'")
			}},
		shutdownOn("shutdown-on-sigterm", "what SIGTERM does: default or save (final snapshot), nosave, force (exit even if the snapshot fails), now",
			func(c *Config) *string { return &c.ShutdownOnSigterm }),
		shutdownOn("shutdown-on-sigint", "what SIGINT does, as shutdown-on-sigterm",
			func(c *Config) *string { return &c.ShutdownOnSigint }),
		Bool("stop-writes-on-bgsave-error", "refuse writes with MISCONF while the last snapshot failed (default no: limits keep working; see docs/operations.md)", true,
			func(c *Config) *bool { return &c.StopWritesOnBGSaveError }).with(ReloadPersistence),
		Bool("discard-corrupt-snapshot",
			"start empty when the snapshot is corrupt, moving it aside to <file>.corrupt (default: refuse to start)", false,
			func(c *Config) *bool { return &c.DiscardCorrupt }),
	}
}

// outputBufferLimit is client-output-buffer-limit in Redis's syntax: one
// or more "class hard soft soft-seconds", the sizes in bytes or with a
// unit; a class not named keeps its limits.
func outputBufferLimit() *Directive {
	return (&Directive{Name: "client-output-buffer-limit", Mutable: true,
		Help: "close a client whose unread replies pass hard bytes, or soft bytes for soft-seconds: 'normal|replica|pubsub hard soft soft-seconds ...' (0: no bound)",
		Get: func(c *Config) string {
			var parts []string
			for i, l := range c.OutputBuffer {
				parts = append(parts, ClassNames[i], strconv.FormatInt(l.Hard, 10), strconv.FormatInt(l.Soft, 10), strconv.Itoa(l.SoftSeconds))
			}
			return strings.Join(parts, " ")
		},
		Set: func(c *Config, v string) error {
			f := strings.Fields(v)
			if len(f) == 0 || len(f)%4 != 0 {
				return errors.New("wrong number of arguments: 'class hard soft soft-seconds', repeated")
			}
			next := c.OutputBuffer
			for i := 0; i < len(f); i += 4 {
				class := -1
				for k, name := range ClassNames {
					if strings.EqualFold(f[i], name) || (k == ClassReplica && strings.EqualFold(f[i], "slave")) {
						class = k
					}
				}
				if class < 0 {
					return fmt.Errorf("invalid client class '%s' (normal, replica, pubsub)", f[i])
				}
				hard, err := ParseSize(f[i+1])
				if err != nil {
					return err
				}
				soft, err := ParseSize(f[i+2])
				if err != nil {
					return err
				}
				secs, err := strconv.Atoi(f[i+3])
				if err != nil || secs < 0 {
					return fmt.Errorf("soft-seconds must be a whole number of seconds, got '%s'", f[i+3])
				}
				next[class] = OutputLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
			}
			c.OutputBuffer = next
			return nil
		}}).with(ReloadLimits)
}

// shutdownOn is a shutdown-on-* directive.
func shutdownOn(name, help string, field func(c *Config) *string) *Directive {
	return &Directive{Name: name, Help: help, Mutable: true,
		Get: func(c *Config) string { return *field(c) },
		Set: func(c *Config, v string) error {
			if _, err := ParseShutdownMode(v); err != nil {
				return err
			}
			*field(c) = strings.ToLower(strings.Join(strings.Fields(v), " "))
			return nil
		}}
}

func limits() []*Directive {
	return []*Directive{
		Size("proto-max-bulk-len", "longest argument a client may send (bytes; k, kb, m, mb, g, gb accepted)", true, 1<<10,
			func(c *Config) *int64 { return &c.MaxBulkLen }).with(ReloadLimits),
		Int("proto-max-multibulk-len", "most arguments in one command", true, 1,
			func(c *Config) *int { return &c.MaxArgs }).with(ReloadLimits),
		Size("client-query-buffer-limit", "longest unfinished command a client may make the server hold (bytes)", true, 1<<20,
			func(c *Config) *int64 { return &c.QueryBufferLimit }).with(ReloadLimits),
		Int("maxclients", "most simultaneous client connections", true, 1,
			func(c *Config) *int { return &c.MaxClients }).with(ReloadLimits),
		Int("timeout", "close a client idle for this many seconds (0: never)", true, 0,
			func(c *Config) *int { return &c.Timeout }).with(ReloadLimits),
		Int("max-key-len", "longest key a command may name (bytes)", true, 1,
			func(c *Config) *int { return &c.MaxKeyLen }).with(ReloadLimits),
		outputBufferLimit(),
		Int("client-write-timeout", "close a client whose replies wait this many seconds unread (0: never)", true, 0,
			func(c *Config) *int { return &c.WriteTimeout }).with(ReloadLimits),
	}
}

func memory() []*Directive {
	return []*Directive{
		Size("maxmemory", "limit on the keyspace's accounted memory, in bytes or with k/kb/m/mb/g/gb (0: none)", true, 0,
			func(c *Config) *int64 { return &c.MaxMemory }).with(ReloadMemory),
		Size("gc-headroom", "most bytes of garbage the heap may gather between two collections while collecting is expensive (two seconds of it): fewer collections for up to that much more memory (0: Go's default alone; a GOGC in the environment wins)", true, 0,
			func(c *Config) *int64 { return &c.GCHeadroom }),
		{Name: "maxmemory-policy", Mutable: true, Reload: ReloadMemory,
			Help: "what to do over maxmemory: noeviction (refuse new keys) or volatile-ttl (evict keys closest to expiry)",
			Get:  func(c *Config) string { return c.MaxMemoryPolicy },
			Set: func(c *Config, v string) error {
				v = strings.ToLower(v)
				if v != "noeviction" && v != "volatile-ttl" {
					return fmt.Errorf("unsupported policy '%s' (noeviction or volatile-ttl)", v)
				}
				c.MaxMemoryPolicy = v
				return nil
			}},
	}
}

func observability() []*Directive {
	return []*Directive{
		{Name: "slowlog-log-slower-than", Mutable: true, Reload: ReloadSlowlog,
			Help: "log commands slower than this many microseconds (0: every command, negative: none)",
			Get:  func(c *Config) string { return strconv.FormatInt(c.SlowlogLogSlowerThan, 10) },
			Set: func(c *Config, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("argument couldn't be parsed into an integer")
				}
				c.SlowlogLogSlowerThan = n
				return nil
			}},
		Int("slowlog-max-len", "how many slow commands the slow log keeps", true, 0,
			func(c *Config) *int { return &c.SlowlogMaxLen }).with(ReloadSlowlog),
		{Name: "notify-keyspace-events", Mutable: true, Reload: ReloadNotify,
			Help: "keyspace notifications published through pub/sub, in Redis's letters (K, E, g, $, l, s, h, z, x, e, A, ...); empty: none",
			Get:  func(c *Config) string { return FormatNotifyEvents(c.NotifyKeyspaceEvents) },
			Set: func(c *Config, v string) error {
				flags, ok := ParseNotifyEvents(v)
				if !ok {
					return fmt.Errorf("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
				}
				c.NotifyKeyspaceEvents = flags
				return nil
			}},
		Bool("analytics", "record each limiter decision's key: top limited keys (RL.TOP) and per-second and per-minute history (RL.HISTORY), in fixed memory", true,
			func(c *Config) *bool { return &c.Analytics }).with(ReloadAnalytics),
		{Name: "analytics-period", Mutable: true, Reload: ReloadAnalytics,
			Help: "RL.TOP counts the decisions of the period holding now and of the one before (from 1s to 1d)",
			Get:  func(c *Config) string { return limit.FormatDuration(c.AnalyticsPeriodOrDefault()) },
			Set: func(c *Config, v string) error {
				d, err := limit.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("invalid duration '%s': %v", v, err)
				}
				if d < time.Second || d > 24*time.Hour {
					return fmt.Errorf("analytics-period must be from 1s to 1d")
				}
				c.AnalyticsPeriod = d
				return nil
			}},
		String("metrics-addr",
			"serve Prometheus metrics at http://<addr>/metrics, for example 127.0.0.1:9121 (empty: off)", false,
			func(c *Config) *string { return &c.MetricsAddr }),
		Bool("dashboard", "serve the live dashboard at http://<metrics-addr>/dashboard, behind the ACL's passwords (see docs/operations.md)", true,
			func(c *Config) *bool { return &c.Dashboard }),
	}
}

func tls() []*Directive {
	return []*Directive{
		Int("tls-port", "TCP port for TLS connections (0: no TLS)", false, 0,
			func(c *Config) *int { return &c.TLSPort }),
		String("tls-cert-file", "server certificate for TLS (PEM)", false,
			func(c *Config) *string { return &c.TLSCertFile }),
		String("tls-key-file", "private key of tls-cert-file (PEM)", false,
			func(c *Config) *string { return &c.TLSKeyFile }),
		String("tls-ca-cert-file", "CA certificates that sign client certificates (PEM)", false,
			func(c *Config) *string { return &c.TLSCACertFile }),
		{Name: "tls-auth-clients", Help: "client certificates: yes (required), optional, or no",
			Get: func(c *Config) string { return c.TLSAuthClients },
			Set: func(c *Config, v string) error {
				switch v = strings.ToLower(v); v {
				case "yes", "no", "optional":
					c.TLSAuthClients = v
					return nil
				}
				return fmt.Errorf("argument must be 'yes', 'no' or 'optional'")
			}},
	}
}

func policies() []*Directive {
	return []*Directive{
		String("rules", "YAML file of named policies, watched for changes (see docs/policies.md)", false,
			func(c *Config) *string { return &c.Rules }),
		{Name: "rules-poll", Help: "how often the rules file is checked for changes",
			Get: func(c *Config) string { return limit.FormatDuration(c.RulesPollOrDefault()) },
			Set: func(c *Config, v string) error {
				d, err := limit.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("invalid duration '%s': %v", v, err)
				}
				c.RulesPoll = d
				return nil
			}},
	}
}

func replication() []*Directive {
	ds := []*Directive{
		Int("replica-priority", "Sentinel promotes the replica with the lowest priority first; 0: never", true, 0,
			func(c *Config) *int { return &c.ReplicaPriority }),
		String("replica-announce-ip", "the address a replica gives its primary, as Sentinel should reach it (empty: the connection's)", true,
			func(c *Config) *string { return &c.ReplicaAnnounceIP }),
		Int("replica-announce-port", "the port a replica gives its primary (0: the listening port)", true, 0,
			func(c *Config) *int { return &c.ReplicaAnnouncePort }),
		replicaOf("replicaof", ""),
		replicaOf("slaveof", "replicaof"),
		String("masterauth", "the password this replica authenticates to its primary with", true,
			func(c *Config) *string { return &c.MasterAuth }),
		String("masteruser", "the user this replica authenticates to its primary as (empty: AUTH with the password alone)", true,
			func(c *Config) *string { return &c.MasterUser }),
		Size("repl-backlog-size", "bytes of the change stream a primary keeps for replicas that reconnect (partial resynchronisation)", true, 16<<10,
			func(c *Config) *int64 { return &c.ReplBacklogSize }).with(ReloadReplication),
		Int("repl-backlog-ttl", "seconds a primary with no replica keeps its backlog before freeing it (0: for ever)", true, 0,
			func(c *Config) *int { return &c.ReplBacklogTTL }).with(ReloadReplication),
		Bool("replica-read-only", "a replica refuses writes from its clients (READONLY)", true,
			func(c *Config) *bool { return &c.ReplicaReadOnly }).with(ReloadReplication),
		Int("repl-timeout", "seconds without a byte from the other side before a replication link is dropped", true, 1,
			func(c *Config) *int { return &c.ReplTimeout }),
		Int("repl-ping-replica-period", "seconds between the PINGs a primary sends its replicas", true, 1,
			func(c *Config) *int { return &c.ReplPingReplicaPeriod }),
		Int("limiter-wait-replicas", "replicas that must acknowledge a limiter command's effect before its reply leaves (0: none, the reply does not wait)", true, 0,
			func(c *Config) *int { return &c.LimiterWaitReplicas }).with(ReloadReplication),
		Int("limiter-wait-timeout", "milliseconds a limiter command's reply waits for limiter-wait-replicas before it is answered -NOREPLICAS (0: forever)", true, 0,
			func(c *Config) *int { return &c.LimiterWaitTimeout }).with(ReloadReplication),
	}
	for _, name := range []string{"min-replicas-to-write", "min-slaves-to-write"} {
		d := Int(name, "writes are refused (-NOREPLICAS) while fewer replicas than this acknowledged within min-replicas-max-lag seconds (0: never)", true, 0,
			func(c *Config) *int { return &c.MinReplicasToWrite }).with(ReloadReplication)
		if name == "min-slaves-to-write" {
			d.AliasOf = "min-replicas-to-write"
		}
		ds = append(ds, d)
	}
	for _, name := range []string{"min-replicas-max-lag", "min-slaves-max-lag"} {
		d := Int(name, "seconds since its last acknowledgement within which a replica counts for min-replicas-to-write (0: the check is off)", true, 0,
			func(c *Config) *int { return &c.MinReplicasMaxLag }).with(ReloadReplication)
		if name == "min-slaves-max-lag" {
			d.AliasOf = "min-replicas-max-lag"
		}
		ds = append(ds, d)
	}
	return ds
}

// replicaOf is replicaof (and its old name slaveof): "host port" of the
// primary this server replicates at start-up; empty or "no one": none.
func replicaOf(name, aliasOf string) *Directive {
	return &Directive{Name: name, Help: "host port: replicate that primary from start-up (empty: be a primary)", Words: true, AliasOf: aliasOf,
		Get: func(c *Config) string { return c.ReplicaOf },
		Set: func(c *Config, v string) error {
			f := strings.Fields(v)
			switch {
			case len(f) == 0 || (len(f) == 2 && strings.EqualFold(f[0], "no") && strings.EqualFold(f[1], "one")):
				c.ReplicaOf = ""
			case len(f) == 2:
				if p, err := strconv.Atoi(f[1]); err != nil || p < 1 || p > 65535 {
					return fmt.Errorf("invalid master port %q", f[1])
				}
				c.ReplicaOf = f[0] + " " + f[1]
			default:
				return fmt.Errorf("replicaof wants 'host port'")
			}
			return nil
		}}
}

func appendOnly() []*Directive {
	return []*Directive{
		Bool("appendonly", "log every change to an append-only file, replayed at start-up", true,
			func(c *Config) *bool { return &c.AppendOnly.AppendOnly }).with(ReloadAppendOnly),
		oneOf("appendfsync", "when the append-only file is fsynced: always (before each reply), everysec, no (the OS decides)",
			[]string{"always", "everysec", "no"}, func(c *Config) *string { return &c.AppendFsync }).with(ReloadAppendOnly),
		String("appendfilename", "the append-only files' name prefix", false,
			func(c *Config) *string { return &c.AppendFilename }).protected(),
		String("appenddirname", "the append-only file directory, inside dir", false,
			func(c *Config) *string { return &c.AppendDirname }).protected(),
		Bool("aof-load-truncated", "start from an append-only file whose last record is torn (a crash mid-write), dropping that record", true,
			func(c *Config) *bool { return &c.AOFLoadTruncated }),
	}
}

func clusterDirectives() []*Directive {
	mode := oneOf("cluster-enabled", "yes: a Redis Cluster node (build the cluster with redis-cli --cluster); emulated: one node answering as a cluster owning all 16384 slots (docs/cluster.md)",
		[]string{"no", "yes", "emulated"}, func(c *Config) *string { return &c.ClusterEnabled })
	mode.Mutable = false
	return []*Directive{
		mode,
		Int("cluster-node-timeout", "milliseconds a cluster member may be unreachable before it is failed over, and a member without the majority stops serving", false, 100,
			func(c *Config) *int { return &c.ClusterNodeTimeout }),
		Int("cluster-port", "the cluster bus port the members agree on their topology through (0: port + 10000)", false, 0,
			func(c *Config) *int { return &c.ClusterPort }),
		Int("cluster-announce-bus-port", "the bus port the other members are given for this node, behind a proxy or NAT (0: cluster-port)", false, 0,
			func(c *Config) *int { return &c.ClusterAnnounceBusPort }),
		String("cluster-announce-ip", "the address the other members and cluster clients are given for this node (empty: the bind address, or 127.0.0.1)", false,
			func(c *Config) *string { return &c.ClusterAnnounceIP }),
	}
}

// oneOf is a string directive limited to values.
func oneOf(name, help string, values []string, field func(c *Config) *string) *Directive {
	d := String(name, help, true, field)
	d.Set = func(c *Config, v string) error {
		for _, x := range values {
			if strings.EqualFold(v, x) {
				*field(c) = x
				return nil
			}
		}
		return fmt.Errorf("argument must be one of %s", strings.Join(values, ", "))
	}
	return d
}

func rls() []*Directive {
	grpcTLS := oneOf("grpc-tls", "TLS on grpc-port with the tls-* certificates and client policy: auto (when tls-cert-file and tls-key-file are set), yes or no",
		[]string{"auto", "yes", "no"}, func(c *Config) *string { return &c.GRPCTLS })
	grpcTLS.Mutable = false // the listener is built once, at start-up
	return []*Directive{
		grpcTLS,
		Int("grpc-port", "TCP port of Envoy's rate limit service (gRPC) on bind (0: off)", false, 0,
			func(c *Config) *int { return &c.GRPCPort }),
		String("rls-config-dir", "directory of envoyproxy/ratelimit YAML rules files served on grpc-port", false,
			func(c *Config) *string { return &c.RLSConfigDir }),
		Int("rls-http-port", "TCP port of the rate limit service's HTTP side (/json, /healthcheck, /rlconfig) on bind (0: off)", false, 0,
			func(c *Config) *int { return &c.RLSHTTPPort }),
		Bool("rls-all-or-nothing", "charge a rate limit request only when every descriptor is admitted, and nothing otherwise (RL.HITALL's rule), instead of each descriptor on its own as envoyproxy/ratelimit does", false,
			func(c *Config) *bool { return &c.RLSAllOrNothing }),
		Bool("rls-response-headers", "add RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of the most restrictive descriptor to the rate limit service's answers", false,
			func(c *Config) *bool { return &c.RLSResponseHeaders }),
		headerName("rls-header-limit", "name of the header rls-response-headers gives the limit in (envoyproxy/ratelimit's LIMIT_LIMIT_HEADER)",
			func(c *Config) *string { return &c.RLSHeaderLimit }),
		headerName("rls-header-remaining", "name of the header rls-response-headers gives the remaining count in (LIMIT_REMAINING_HEADER)",
			func(c *Config) *string { return &c.RLSHeaderRemaining }),
		headerName("rls-header-reset", "name of the header rls-response-headers gives the seconds to the reset in (LIMIT_RESET_HEADER)",
			func(c *Config) *string { return &c.RLSHeaderReset }),
		Bool("rls-shadow-mode", "answer every rate limit request OK, with the descriptors' codes, counters and statistics as they would have been (envoyproxy/ratelimit's SHADOW_MODE)", false,
			func(c *Config) *bool { return &c.RLSShadowMode }),
		Bool("rls-quota-mode", "every rule in quota mode: over its limit a descriptor answers OK and does not make the request OVER_LIMIT (envoyproxy/ratelimit's QUOTA_MODE)", false,
			func(c *Config) *bool { return &c.RLSQuotaMode }),
		Bool("rls-stop-increment-when-overlimit", "when a descriptor of a request would go over its limit, charge only the descriptors that would (envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT)", false,
			func(c *Config) *bool { return &c.RLSStopIncrementWhenOverLimit }),
		nearLimitRatio(),
		Bool("rls-merge-domain-config", "merge the rules files of one domain instead of refusing them (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG)", false,
			func(c *Config) *bool { return &c.RLSMergeDomainConfig }),
		Size("rls-config-max-bytes", "the most bytes the rules files of rls-config-dir may hold together; larger rules are refused with an error naming this directive (0: no cap; bytes, k, kb, m, mb, g, gb accepted)", false, 0,
			func(c *Config) *int64 { return &c.RLSConfigMaxBytes }),
	}
}

// headerName is a start-up directive naming a response header: a token,
// as HTTP allows in a field name.
func headerName(name, help string, field func(c *Config) *string) *Directive {
	d := String(name, help, false, field)
	d.Set = func(c *Config, v string) error {
		if v == "" || strings.IndexFunc(v, func(r rune) bool { return !headerChar(r) }) >= 0 {
			return fmt.Errorf("argument must be a header name (letters, digits and !#$%%&'*+-.^_`|~)")
		}
		*field(c) = v
		return nil
	}
	return d
}

// headerChar reports whether r may be in an HTTP field name (RFC 9110's
// tchar).
func headerChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// nearLimitRatio is rls-near-limit-ratio: a number from 0 to 1.
func nearLimitRatio() *Directive {
	return &Directive{Name: "rls-near-limit-ratio",
		Help: "share of a limit past which hits count as near_limit in the rate limit service's statistics, 0 to 1 (envoyproxy/ratelimit's NEAR_LIMIT_RATIO)",
		Get:  func(c *Config) string { return strconv.FormatFloat(c.RLSNearLimitRatio, 'g', -1, 64) },
		Set: func(c *Config, v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || !(r >= 0 && r <= 1) {
				return fmt.Errorf("argument must be a number from 0 to 1")
			}
			c.RLSNearLimitRatio = r
			return nil
		}}
}
