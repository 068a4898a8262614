// Package config is limitdb's configuration: the Config type, the one
// table of directives (named as in Redis) that command-line flags, the
// config file and CONFIG GET/SET all go through, and the redis.conf file
// syntax (parse, apply, rewrite).
//
// It knows what each parameter means and how it is written, never how a
// running server applies a change: a Directive says which part of the
// server a change reloads, and the command layer does it. It imports no
// package of the project but engine/limit (durations).
package config

import (
	"fmt"
	"strings"
	"time"
)

// Config is the server's configuration. Every field is reachable through a
// Directive.
type Config struct {
	Bind string // listen address, 127.0.0.1 by default
	Port int    // 6379 by default; 0 picks a free port
	Dir  string // working directory for snapshots

	Shards int // keyspace shards; 0 means the engine's default

	EventLoop bool // event-loop: TCP connections served by one epoll loop per core (Linux)

	// ClusterEnabled is cluster-enabled: "no"; "yes", a member of a Redis
	// Cluster built with redis-cli --cluster; or "emulated", one node that
	// answers the cluster client protocol owning all 16384 slots
	// (docs/cluster.md).
	ClusterEnabled     string
	ClusterNodeTimeout int    // cluster-node-timeout, milliseconds
	ClusterPort        int    // cluster-port: the bus port; 0 is port + 10000
	ClusterAnnounceIP  string // cluster-announce-ip
	// ClusterAnnounceBusPort is cluster-announce-bus-port: the bus port the
	// other members are given, when they reach this one through a proxy
	// or NAT; 0 is cluster-port.
	ClusterAnnounceBusPort int

	// ConfigFile is the file the server's directives were read from
	// (--config), which CONFIG REWRITE rewrites; "" when there is none.
	// It is not a directive.
	ConfigFile string

	// EnableProtectedConfigs is enable-protected-configs: whether CONFIG
	// SET may change protected directives (dbfilename): no, yes, or local
	// (from loopback clients only).
	EnableProtectedConfigs string

	// Persistence and memory.
	Save                    int    // seconds between automatic snapshots when anything changed; 0: never
	DBFilename              string // snapshot file name inside Dir
	DiscardCorrupt          bool   // start empty (moving the file aside) when the snapshot is corrupt
	StopWritesOnBGSaveError bool   // stop-writes-on-bgsave-error: refuse writes (MISCONF) while the last snapshot failed
	ShutdownOnSigterm       string // shutdown-on-sigterm: default, save, nosave, force, now (ShutdownMode)
	ShutdownOnSigint        string // shutdown-on-sigint: the same for SIGINT
	MaxMemory               int64  // dataset bytes before the policy applies; 0: no limit
	MaxMemoryPolicy         string // noeviction or volatile-ttl
	GCHeadroom              int64  // gc-headroom: most bytes the heap may grow by between two collections while collecting is expensive; 0: Go's GOGC=100 alone
	BusyReplyThreshold      int    // busy-reply-threshold (lua-time-limit): ms a script runs before others get -BUSY
	ScriptMemoryLimit       int64  // script-memory-limit: bytes a running script may grow the heap by; 0: no limit

	// Observability.
	SlowlogLogSlowerThan int64  // microseconds; 0 logs every command, negative none
	SlowlogMaxLen        int    // entries the slow log keeps
	MetricsAddr          string // Prometheus endpoint address; empty: off
	Dashboard            bool   // dashboard: serve the live page on the metrics listener
	// NotifyKeyspaceEvents is notify-keyspace-events: the classes of
	// keyspace notifications published, Notify* bits; 0 (none) by default.
	NotifyKeyspaceEvents int
	// Analytics is analytics: record every limiter decision's key for
	// the top limited keys (RL.TOP) and the per-second and per-minute
	// history (RL.HISTORY); off by default (docs/operations.md says why).
	Analytics bool
	// AnalyticsPeriod is analytics-period: RL.TOP counts the period
	// holding now and the one before; 0: DefaultAnalyticsPeriod.
	AnalyticsPeriod time.Duration

	Replica     // replica-priority, replica-announce-*, replicaof, repl-*
	AppendOnly  // appendonly, appendfsync, ...
	Security    // requirepass, aclfile, protected mode
	TLS         // tls-*
	Limits      // protocol and client limits
	PolicyRules // rules, rules-poll: named policies
	RLS         // grpc-port, rls-*, grpc-tls: Envoy's rate limit service
	Regions     // region, region-peer, region-*: global policies across regions
}

// Default is what a newcomer gets with no flags.
func Default() Config {
	return Config{Bind: "127.0.0.1", Port: 6379, Dir: "./data",
		Save: 60, DBFilename: "dump.ldb", MaxMemoryPolicy: "noeviction", BusyReplyThreshold: 5000, ScriptMemoryLimit: 128 << 20, GCHeadroom: 128 << 20,
		ShutdownOnSigterm: "default", ShutdownOnSigint: "default", EnableProtectedConfigs: "no",
		SlowlogLogSlowerThan: 10000, SlowlogMaxLen: 128, ClusterEnabled: "no", ClusterNodeTimeout: 15000,
		EventLoop: true, Replica: Replica{ReplicaPriority: 100, ReplBacklogSize: 32 << 20, ReplBacklogTTL: 3600, ReplicaReadOnly: true, ReplTimeout: 60, ReplPingReplicaPeriod: 10, MinReplicasMaxLag: 10, LimiterWaitTimeout: 1000},
		AppendOnly: AppendOnly{AppendFsync: "everysec", AppendFilename: "appendonly.aof", AppendDirname: "appendonlydir", AOFLoadTruncated: true}, Security: Security{ProtectedMode: true}, TLS: TLS{TLSAuthClients: "yes"}, RLS: RLS{GRPCTLS: "auto", RLSNearLimitRatio: 0.8, RLSConfigMaxBytes: 8 << 20,
			RLSHeaderLimit: "RateLimit-Limit", RLSHeaderRemaining: "RateLimit-Remaining", RLSHeaderReset: "RateLimit-Reset"}, Limits: DefaultLimits(),
		Regions: Regions{OnPartition: PartitionKeepLast}}
}

// Replica is how a node describes itself as a replica, named as in Redis:
// Sentinel reads them to choose a replica to promote.
type Replica struct {
	ReplicaPriority     int    // replica-priority: lower is preferred, 0 never promoted
	ReplicaAnnounceIP   string // replica-announce-ip: the address to announce ("" : the connection's)
	ReplicaAnnouncePort int    // replica-announce-port: the port to announce (0: the listening one)

	ReplicaOf             string // replicaof: "host port" of the primary to replicate ("": be a primary)
	MasterAuth            string // masterauth: the password for the primary
	MasterUser            string // masteruser: the user for the primary ("": AUTH password)
	ReplBacklogSize       int64  // repl-backlog-size: stream bytes kept for partial resynchronisation (docs/replication.md, "The backlog")
	ReplBacklogTTL        int    // repl-backlog-ttl: seconds a primary with no replica keeps its backlog (0: for ever)
	ReplicaReadOnly       bool   // replica-read-only: a replica refuses its clients' writes
	ReplTimeout           int    // repl-timeout: seconds of silence before a link is dropped
	ReplPingReplicaPeriod int    // repl-ping-replica-period: seconds between a primary's PINGs
	MinReplicasToWrite    int    // min-replicas-to-write: writes are refused with fewer good replicas (0: never)
	MinReplicasMaxLag     int    // min-replicas-max-lag: seconds since its last ACK within which a replica is good
	LimiterWaitReplicas   int    // limiter-wait-replicas: replicas that must have a limiter's effect before its reply leaves
	LimiterWaitTimeout    int    // limiter-wait-timeout: milliseconds the reply waits for them (0: forever)
}

// AppendOnly is the append-only file, named as in Redis.
type AppendOnly struct {
	AppendOnly       bool   // appendonly: log every change, replay it at start-up
	AppendFsync      string // appendfsync: always, everysec, no
	AppendFilename   string // appendfilename: the files' name prefix
	AppendDirname    string // appenddirname: the directory inside Dir
	AOFLoadTruncated bool   // aof-load-truncated: accept a torn last record
}

// Security is who may connect and run what.
type Security struct {
	RequirePass   string // requirepass: the default user's password ("" : none)
	ACLFile       string // aclfile: users, passwords and command permissions
	ProtectedMode bool   // protected-mode: without a password, refuse non-loopback clients
}

// TLS configures the TLS listener, named as in Redis. It serves the same
// commands as the plain port.
type TLS struct {
	TLSPort        int    // tls-port: 0 disables TLS
	TLSCertFile    string // tls-cert-file: server certificate (PEM)
	TLSKeyFile     string // tls-key-file: its private key (PEM)
	TLSCACertFile  string // tls-ca-cert-file: CA that signs client certificates
	TLSAuthClients string // tls-auth-clients: yes (require a client certificate), optional, no
}

// Limits bound what one client can make the server hold or do. Every limit
// has a directive named as in Redis where Redis has one.
type Limits struct {
	MaxBulkLen       int64 // proto-max-bulk-len: longest argument, bytes
	MaxArgs          int   // proto-max-multibulk-len: most arguments in one command
	QueryBufferLimit int64 // client-query-buffer-limit: longest unfinished command, bytes
	MaxClients       int   // maxclients
	Timeout          int   // timeout: seconds a client may stay idle (0: forever)
	MaxKeyLen        int   // max-key-len: longest key, bytes
	WriteTimeout     int   // client-write-timeout: seconds a reply may wait on a client that does not read (0: forever)

	// OutputBuffer is client-output-buffer-limit, per class of client.
	OutputBuffer [ClientClasses]OutputLimit
}

// The classes of client-output-buffer-limit, as in Redis.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
	ClientClasses
)

// ClassNames are the classes' names in client-output-buffer-limit.
var ClassNames = [ClientClasses]string{"normal", "replica", "pubsub"}

// OutputLimit bounds the replies a client has not read: over Hard bytes
// it is closed at once, over Soft bytes for SoftSeconds it is closed too
// (0 turns a bound off).
type OutputLimit struct {
	Hard, Soft  int64
	SoftSeconds int
}

// DefaultLimits are Redis's defaults, and limitdb's for what Redis lacks.
func DefaultLimits() Limits {
	return Limits{
		MaxBulkLen:       512 << 20,
		MaxArgs:          1 << 20,
		QueryBufferLimit: 1 << 30,
		MaxClients:       10000,
		MaxKeyLen:        64 << 10,
		WriteTimeout:     60,
		// Redis's defaults.
		OutputBuffer: [ClientClasses]OutputLimit{
			ClassNormal:  {},
			ClassReplica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
			ClassPubSub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
		},
	}
}

// ShutdownMode is what a signal's shutdown does, from the words of
// shutdown-on-sigterm or shutdown-on-sigint, as in Redis 7: "default" and
// "save" write the final snapshot (limitdb snapshots on shutdown by
// default, --save 0 or not), "nosave" does not, "force" exits even when
// the snapshot fails, "now" is accepted (there are no replicas to wait
// for).
type ShutdownMode struct {
	Save, Force bool
}

// ParseShutdownMode reads the words of a shutdown-on-* directive.
func ParseShutdownMode(v string) (ShutdownMode, error) {
	m := ShutdownMode{Save: true}
	var save, nosave bool
	for _, w := range strings.Fields(strings.ToLower(v)) {
		switch w {
		case "default", "now":
		case "save":
			save = true
		case "nosave":
			nosave, m.Save = true, false
		case "force":
			m.Force = true
		default:
			return m, fmt.Errorf("argument must be one or more of default, save, nosave, now, force")
		}
	}
	if save && nosave {
		return m, fmt.Errorf("save and nosave are contradictory")
	}
	return m, nil
}

// PolicyRules is the configuration of named policies.
type PolicyRules struct {
	Rules     string        // YAML rules file of named policies; "" for none
	RulesPoll time.Duration // how often the rules file is checked; 0: DefaultRulesPoll
}

// DefaultAnalyticsPeriod is the top limited keys' period unless
// analytics-period says otherwise.
const DefaultAnalyticsPeriod = time.Minute

// AnalyticsPeriodOrDefault is AnalyticsPeriod, or DefaultAnalyticsPeriod
// when unset.
func (c *Config) AnalyticsPeriodOrDefault() time.Duration {
	if c.AnalyticsPeriod <= 0 {
		return DefaultAnalyticsPeriod
	}
	return c.AnalyticsPeriod
}

// DefaultRulesPoll is how often the rules file is checked unless
// rules-poll says otherwise.
const DefaultRulesPoll = time.Second

// RulesPollOrDefault is RulesPoll, or DefaultRulesPoll when unset.
func (c *Config) RulesPollOrDefault() time.Duration {
	if c.RulesPoll <= 0 {
		return DefaultRulesPoll
	}
	return c.RulesPoll
}

// RLS is Envoy's rate limit service (gRPC, RateLimitService v3) with
// envoyproxy/ratelimit's descriptor rules. It is off until GRPCPort is set.
type RLS struct {
	GRPCPort     int    // grpc-port: the gRPC port on Bind (0: off)
	RLSConfigDir string // rls-config-dir: every YAML file in it is one domain's rules
	RLSHTTPPort  int    // rls-http-port: envoyproxy/ratelimit's HTTP side on Bind (0: off)
	// rls-response-headers: RateLimit-* response_headers_to_add, as
	// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED.
	RLSResponseHeaders bool
	// rls-all-or-nothing: a request is charged only when every descriptor
	// is admitted (RL.HITALL's rule) instead of each on its own.
	RLSAllOrNothing bool
	// rls-header-limit, rls-header-remaining, rls-header-reset: the
	// RateLimit-* headers' names (LIMIT_LIMIT_HEADER,
	// LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER).
	RLSHeaderLimit, RLSHeaderRemaining, RLSHeaderReset string
	// rls-shadow-mode: every answer's overall code is OK, the rest as it
	// would have been (SHADOW_MODE).
	RLSShadowMode bool
	// rls-quota-mode: every rule in quota mode (QUOTA_MODE).
	RLSQuotaMode bool
	// rls-stop-increment-when-overlimit: when a descriptor would go over,
	// the request's others are not charged
	// (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT).
	RLSStopIncrementWhenOverLimit bool
	// rls-near-limit-ratio: the share of a limit past which hits count as
	// near it in the statistics, 0 to 1 (NEAR_LIMIT_RATIO).
	RLSNearLimitRatio float64
	// rls-merge-domain-config: files of one domain are merged instead of
	// refused (MERGE_DOMAIN_CONFIG).
	RLSMergeDomainConfig bool
	// rls-config-max-bytes: the most bytes the rules files may hold
	// together (0: no cap).
	RLSConfigMaxBytes int64
	// grpc-tls: auto (TLS with the tls-* certificates when tls-cert-file
	// and tls-key-file are set; "" means auto too), yes (TLS, refusing to
	// start without them) or no (plain text).
	GRPCTLS string
}
