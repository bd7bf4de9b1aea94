package consumer

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/seal"
)

// Defaults for Config's zero values.
const (
	defaultLiveVersion       = 1
	defaultLease             = 2 * time.Minute // suits a 20 s provider timeout with retries
	defaultHeartbeat         = 30 * time.Second
	defaultMaxDeliver        = 5
	defaultResultRetention   = 30 * 24 * time.Hour
	defaultEvidenceRetention = 400 * 24 * time.Hour
	// defaultTombstoneRetention is ledger.DefaultTombstoneRetention, what prune keeps for a
	// consumer that registered none.
	defaultTombstoneRetention = ledger.DefaultTombstoneRetention
	defaultShadowConcurrency  = 32
	defaultShadowTimeout      = 30 * time.Second
	defaultConcurrency        = 1
	defaultRetryBackoff       = time.Second
	// maxRetryBackoff caps the doubling nak delay of a transiently failing message.
	maxRetryBackoff = time.Minute
)

// Config configures a Consumer. Zero values take the defaults named on each field.
type Config struct {
	// Name is the consumer name: the ledger key and the shadow subject token
	// (protocol.ValidateConsumerName).
	Name string
	// Store is the ledger the SDK keeps its rows in: the *ledger.Store that ledger.Open returns.
	Store Ledger
	Conn  *nats.Conn
	// Stream is the stream Run consumes; live and replayed messages both arrive there.
	Stream string
	// Durable is the durable consumer's name; default Name.
	Durable string
	// FilterSubject optionally narrows the durable consumer to some of Stream's subjects.
	FilterSubject string
	// LiveVersion is the effect version of live messages; default 1.
	LiveVersion int
	Handler     Handler
	// Fingerprint says which payload members the request fingerprint leaves out (a send time,
	// trace context: "sentAt", "trace.*") and which arrays are sets whose order does not matter
	// ("tags"). A redelivery that differs only there is the same request, not a conflict. The
	// stored algorithm name carries a digest of these options (docs/protocol.md); changing them
	// is safe, rows written before are compared under their own options.
	Fingerprint fingerprint.Options
	// Lookup, when set, answers `replayctl reconcile` on replay.reconcile.<Name> (Run serves it):
	// whether an uncertain event's external effect exists. Without it reconcile finds no responder.
	// With it, Run also runs the reconcile worker (ReconcileUncertain) on the consumer's own
	// uncertain rows.
	// Process asks it too, in process and once per event, when a delivery meets expired evidence
	// (a tombstone, or no row for a message older than EvidenceRetention): happened is recorded
	// as reconciled, not_happened is processed, anything else goes to manual review. Without it
	// such a delivery goes to manual review.
	Lookup LookupFunc
	// ReconcileAfter is how long a row must have been uncertain before the reconcile worker asks
	// Lookup about it, so a provider call still settling is not judged; default 15m.
	ReconcileAfter time.Duration
	// ReconcileInterval is how often the reconcile worker looks for due rows; default 1m, doubled
	// after each failed pass up to 30m.
	ReconcileInterval time.Duration
	// Lease is how long a claimed row stays ours without a heartbeat; default 2m (suits a 20 s
	// provider timeout with retries).
	Lease time.Duration
	// Heartbeat is how often the lease is extended while the handler runs; it must be below
	// Lease/2. Default 30s, or Lease/4 when that is shorter.
	Heartbeat time.Duration
	// MaxDeliver is how many deliveries a transiently failing message gets before it is
	// dead-lettered; default 5.
	MaxDeliver int
	// DLQSubject is where poison messages are published: a subject of a Limits-retention DLQ
	// stream. Required by Run and Process; a shadow-only responder may leave it empty.
	DLQSubject string
	// ResultKeyring, when set, seals every result body before it is stored (AES-256-GCM, package
	// seal): the ledger holds {"$sealed":{"keyId","box"}} and the result hash over the plaintext,
	// so shadow compares on the hash unless it is given the keyring (replayctl shadow --keyring).
	ResultKeyring *seal.Keyring
	// ResultRetention keeps result_body until completion + this (replay_until); default 30 days.
	ResultRetention time.Duration
	// EvidenceRetention sets evidence_until; default 400 days, and at least ResultRetention.
	EvidenceRetention time.Duration
	// TombstoneRetention is how long past evidence_until `replayctl ledger prune` keeps the row's
	// tombstone: how long a copy of an event can still arrive after its evidence window (the
	// longest max age of the streams that hold it, a restored backup, a partner's resend). A copy
	// that arrives after its tombstone went runs as a new event. Registered in the ledger with the
	// retention policy; default five years.
	TombstoneRetention time.Duration
	// ShadowConcurrency is how many shadow requests are handled at once; default 32.
	ShadowConcurrency int
	// ShadowTimeout bounds one shadow request's handler; default 30s.
	ShadowTimeout time.Duration
	// Concurrency is how many messages Run handles at once; default 1.
	Concurrency int
	// RetryBackoff is the nak delay after a first transient failure, doubled per delivery up to a
	// minute; default 1s.
	RetryBackoff time.Duration
	// Owner names this instance on the leases it takes, each "<Owner>#<n>" (n counts its handlings);
	// default "<hostname>-<pid>-<8 random hex>".
	Owner string
	// Logger receives IDs, hashes and counts, never payloads; default: discard.
	Logger *slog.Logger
	// Metrics, when set, gets the SDK's Prometheus metrics, labelled consumer=<Name>
	// (docs/ledger.md, "Metrics"); nil registers none. The daily counts `replayctl ledger stats`
	// reads are written to the ledger either way.
	Metrics prometheus.Registerer
	// CountsInterval is how often Run adds the deliveries it counted to the ledger's daily counts
	// and reads the uncertain gauges from it; default 5s.
	CountsInterval time.Duration
	// TracerProvider, when set, gets the SDK's spans (docs/tracing.md); nil uses OpenTelemetry's
	// global provider as it is when New runs: install yours before New. Without a provider that
	// records, deliveries parse no trace header and start no span.
	TracerProvider trace.TracerProvider
}

// Consumer handles a consumer's messages and shadow requests against the ledger.
type Consumer struct {
	cfg       Config
	js        jetstream.JetStream
	log       *slog.Logger
	executing executingCache
	meters    *meters
	// interruptions counts what Run rode through, by reason (MetricPullInterruptions).
	interruptions *prometheus.CounterVec
	fingerprints  *fingerprints
	// traced: an SDK tracer provider was installed when New ran (tracing.Setup, or the application's
	// own), so deliveries get spans; without one, a delivery parses no trace header.
	traced bool
	tracer trace.Tracer
	// claims numbers this instance's handlings, for their lease owners (leaseOwner).
	claims atomic.Uint64
}

// leaseOwner names one handling's lease: Owner, '#', and a number no other handling of this
// instance has. Per instance alone, a redelivery handled while the first delivery still ran (a
// NATS restart redelivers what was not acknowledged) took over the first's lapsed lease under the
// same name, and then both passed the ledger's owner checks and both made the call (the fault
// soak charged an order twice this way). ledger.OwnerInstance strips the number for display.
func (c *Consumer) leaseOwner() string {
	return c.cfg.Owner + "#" + strconv.FormatUint(c.claims.Add(1), 10)
}

// New validates cfg and fills its defaults. A bad config returns an error matching ErrBadConfig
// that names every bad field.
func New(cfg Config) (*Consumer, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	hasher, err := fingerprint.New(cfg.Fingerprint) // withDefaults has checked the options
	if err != nil {
		return nil, fmt.Errorf("%w: Fingerprint: %w", ErrBadConfig, err)
	}
	m, err := newMeters(cfg.Name, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	interruptions, err := newInterruptions(cfg.Name, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: open JetStream: %w", cfg.Name, err)
	}
	tracer := tracing.TracerOf(cfg.TracerProvider)
	return &Consumer{cfg: cfg, js: js, log: cfg.Logger, executing: newExecutingCache(), meters: m,
		interruptions: interruptions,
		fingerprints:  newFingerprints(cfg, hasher), tracer: tracer, traced: tracing.Active(cfg.TracerProvider)}, nil
}

// Config returns the configuration in use, defaults filled in.
func (c *Consumer) Config() Config { return c.cfg }

func withDefaults(cfg Config) (Config, error) {
	var bad []string
	problem := func(field, format string, args ...any) {
		bad = append(bad, field+": "+fmt.Sprintf(format, args...))
	}
	if err := protocol.ValidateConsumerName(cfg.Name); err != nil {
		problem("Name", "%v", err)
	}
	if cfg.Store == nil {
		problem("Store", "required: the ledger the SDK keeps its rows in")
	}
	if cfg.Conn == nil {
		problem("Conn", "required: the NATS connection")
	}
	if cfg.Handler == nil {
		problem("Handler", "required")
	}
	if _, err := fingerprint.New(cfg.Fingerprint); err != nil {
		problem("Fingerprint", "%v", err)
	}
	if cfg.Stream != "" {
		if err := protocol.ValidateStreamName(cfg.Stream); err != nil {
			problem("Stream", "%v", err)
		}
	}
	if cfg.Durable == "" {
		cfg.Durable = cfg.Name
	} else if strings.ContainsAny(cfg.Durable, " \t\r\n.*>") {
		problem("Durable", "%q: a durable name cannot contain white space, '.', '*' or '>'", cfg.Durable)
	}
	if cfg.DLQSubject != "" && !validSubject(cfg.DLQSubject) {
		problem("DLQSubject", "%q is not a subject to publish to: use dot-separated tokens without wildcards or white space", cfg.DLQSubject)
	}
	defaultInt(&cfg.LiveVersion, defaultLiveVersion, "LiveVersion", problem)
	defaultInt(&cfg.MaxDeliver, defaultMaxDeliver, "MaxDeliver", problem)
	defaultInt(&cfg.ShadowConcurrency, defaultShadowConcurrency, "ShadowConcurrency", problem)
	defaultInt(&cfg.Concurrency, defaultConcurrency, "Concurrency", problem)
	defaultDuration(&cfg.Lease, defaultLease, "Lease", problem)
	defaultDuration(&cfg.Heartbeat, min(defaultHeartbeat, cfg.Lease/4), "Heartbeat", problem)
	defaultDuration(&cfg.ResultRetention, defaultResultRetention, "ResultRetention", problem)
	defaultDuration(&cfg.EvidenceRetention, max(defaultEvidenceRetention, cfg.ResultRetention), "EvidenceRetention", problem)
	defaultDuration(&cfg.TombstoneRetention, defaultTombstoneRetention, "TombstoneRetention", problem)
	defaultDuration(&cfg.ShadowTimeout, defaultShadowTimeout, "ShadowTimeout", problem)
	defaultDuration(&cfg.RetryBackoff, defaultRetryBackoff, "RetryBackoff", problem)
	defaultDuration(&cfg.CountsInterval, defaultCountsInterval, "CountsInterval", problem)
	defaultDuration(&cfg.ReconcileAfter, defaultReconcileAfter, "ReconcileAfter", problem)
	defaultDuration(&cfg.ReconcileInterval, defaultReconcileInterval, "ReconcileInterval", problem)
	if cfg.Lease > 0 && cfg.Lease < time.Millisecond {
		problem("Lease", "%s is below the ledger's millisecond resolution", cfg.Lease)
	}
	if cfg.Heartbeat > 0 && cfg.Lease > 0 && cfg.Heartbeat >= cfg.Lease/2 {
		problem("Heartbeat", "%s must be below Lease/2 (%s), so one missed heartbeat does not lose the lease", cfg.Heartbeat, cfg.Lease/2)
	}
	if cfg.EvidenceRetention < cfg.ResultRetention {
		problem("EvidenceRetention", "%s is shorter than ResultRetention %s: the evidence would go before the result it proves", cfg.EvidenceRetention, cfg.ResultRetention)
	}
	if cfg.Owner == "" {
		cfg.Owner = defaultOwner()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(bad) > 0 {
		return cfg, fmt.Errorf("%w: %s", ErrBadConfig, strings.Join(bad, "; "))
	}
	return cfg, nil
}

func defaultInt(v *int, def int, field string, problem func(string, string, ...any)) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		problem(field, "%d is negative; leave it 0 for the default %d", *v, def)
	}
}

func defaultDuration(v *time.Duration, def time.Duration, field string, problem func(string, string, ...any)) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		problem(field, "%s is negative; leave it 0 for the default %s", *v, def)
	}
}

// validSubject accepts a literal NATS subject: non-empty tokens, no wildcards, no white space.
func validSubject(s string) bool {
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return false
		}
	}
	return true
}

// defaultOwner is unique per process start, so a restarted instance never mistakes its
// predecessor's leases for its own.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
