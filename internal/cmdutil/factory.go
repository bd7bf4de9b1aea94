// Package cmdutil is what every verb of replayctl shares (gh's pkg/cmdutil): the Factory that hands
// out the ledger, JetStream, the clock and the streams lazily; the one --json writer and the
// tables; usage errors and the exit-code switch over error kinds; the job-or-manifest argument;
// duration and time flags; progress lines.
package cmdutil

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/replayctl/replayctl/actor"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/natsconn"
	"github.com/replayctl/replayctl/internal/natsurl"
	"github.com/replayctl/replayctl/ledger"
)

// The defaults of --database-url and --nats-url: the local PostgreSQL's test database and NATS.
const (
	DefaultDatabaseURL = "postgres:///test?host=/var/run/postgresql"
	DefaultNATSURL     = natsconn.DefaultURL
	// connectTimeout bounds opening a connection, so an unreachable host fails the command in
	// seconds instead of hanging an operator's terminal or a CI job.
	connectTimeout = 10 * time.Second
	// DefaultProgressInterval is --progress-interval: a line every 10 s keeps a log readable and
	// shows a stuck run within seconds.
	DefaultProgressInterval = 10 * time.Second
)

// Factory hands commands their dependencies. Every dependency is a func called only when a
// command runs, never when it is built, so --help and flag errors cannot touch the network;
// tests replace the funcs they need.
type Factory struct {
	// IOStreams are the streams every command reads and writes.
	IOStreams *iostreams.IOStreams
	// Ledger opens the ledger at DatabaseURL on first use and returns the same store afterwards;
	// Execute closes it when the command ends.
	Ledger func(ctx context.Context) (*ledger.Store, error)
	// JetStream connects to NATSURL; the caller runs the returned func to close the connection.
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
	// Now is the clock, fixed in tests.
	Now func() time.Time
	// Actor names the operator recorded in the audit log: --actor, else $USER, else the OS user
	// the process runs as (its name, else "uid N").
	Actor func() string
	// JSON reports whether --json was given.
	JSON func() bool
	// DatabaseURL is --database-url, else $REPLAYCTL_DATABASE_URL, else $DATABASE_URL, else the
	// local PostgreSQL socket, database test.
	DatabaseURL func() string
	// NATS resolves the connection settings: the connection flags, else natscli's NATS_*
	// variables, else the natscli context (--context, $NATS_CONTEXT or the selected one).
	NATS func() (natsconn.Settings, error)
	// NATSURL is the server list NATS resolves to: --nats-url, else $NATS_URL, else the
	// context's url, else nats://127.0.0.1:4222.
	NATSURL func() string

	flags globalFlags

	mu    sync.Mutex
	store *ledger.Store
	// jqOut holds stdout under --jq until the command ends (jq.go).
	jqOut *JQOutput
	// fold folds stdout's lines at a terminal's width until the command ends.
	fold *iostreams.FoldWriter
}

// globalFlags holds the persistent flags NewCmdRoot binds. Defaults that come from the
// environment are resolved when read rather than shown as flag defaults, so --help never prints
// a URL with a password in it.
type globalFlags struct {
	databaseURL string
	nats        natsconn.Flags
	actor       string
	json        bool
	// progressInterval is --progress-interval: how often a long command logs a progress line
	// where it draws no bar.
	progressInterval time.Duration
	// jq is --jq: a jq expression applied to the --json output (it implies --json).
	jq string
}

// NewFactory returns the production Factory writing to ios.
func NewFactory(ios *iostreams.IOStreams) *Factory {
	f := &Factory{IOStreams: ios, Now: time.Now}
	f.DatabaseURL = func() string {
		return firstNonEmpty(f.flags.databaseURL, os.Getenv("REPLAYCTL_DATABASE_URL"), os.Getenv("DATABASE_URL"), DefaultDatabaseURL)
	}
	f.NATS = func() (natsconn.Settings, error) { return natsconn.Resolve(f.flags.nats, os.Getenv) }
	f.NATSURL = func() string {
		if settings, err := f.NATS(); err == nil {
			return settings.Servers()
		}
		return firstNonEmpty(f.flags.nats.URL, os.Getenv("NATS_URL"), DefaultNATSURL)
	}
	f.Actor = func() string {
		raw := f.rawActor()
		if name, err := actor.Normalize(raw); err == nil {
			return name
		}
		return raw // the root command refuses it before any verb runs (manifest.ValidateActor)
	}
	f.JSON = func() bool { return f.flags.json || f.flags.jq != "" }
	f.Ledger = f.openLedger
	f.JetStream = f.connectJetStream
	return f
}

// osUser names the user the process runs as, for an actor when $USER is unset (cron, systemd,
// a container's entrypoint): the account name, else the numeric uid, never a made-up name.
func osUser() string {
	if u, err := user.Current(); err == nil && strings.TrimSpace(u.Username) != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func (f *Factory) openLedger(ctx context.Context) (*ledger.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store != nil {
		return f.store, nil
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	// ledger.Open's errors already name the redacted URL and the flag to check.
	store, err := ledger.Open(ctx, f.DatabaseURL())
	if err != nil {
		return nil, err
	}
	f.store = store
	return store, nil
}

// CloseLedger closes the store openLedger opened, if any.
func (f *Factory) CloseLedger() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store != nil {
		f.store.Close()
		f.store = nil
	}
}

func (f *Factory) connectJetStream(ctx context.Context) (jetstream.JetStream, func(), error) {
	settings, err := f.NATS()
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, note := range settings.Notes() {
		fmt.Fprintf(f.IOStreams.ErrOut, "replayctl: note: %s\n", note)
	}
	timeout := connectTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	// natsconn's errors name the redacted servers and where each credential came from.
	nc, err := natsconn.Connect(settings, "replayctl", timeout, connectionEvents(f.IOStreams, settings)...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("opening JetStream at %s: %w; check --nats-url / NATS_URL", natsurl.Redact(settings.Servers()), natsurl.ScrubError(err, settings.Servers()))
	}
	return js, nc.Close, nil
}

// userinfoPassword matches the password of any scheme://user:password@ in free text. Quotes and
// backquotes end a URL quoted in a message.
var userinfoPassword = regexp.MustCompile("(?i)\\b([a-z][a-z0-9+.-]*://[^\\s:/@\"'`]*:)[^\\s@\"'`]+@")

// RedactCredentials masks every URL password and NATS token in msg, and every password= of a
// key=value connection string, wherever it came from. The configured URLs are redacted by value
// before; this catches a URL the operator misplaced, for example as an argument
// (`--database-url= postgres://u:pw@host/db` makes the URL a positional argument, which usage
// errors and "no such job" quote back).
func RedactCredentials(msg string) string {
	msg = userinfoPassword.ReplaceAllString(msg, "${1}xxxxx@")
	msg = natsurl.RedactKeys(natsurl.RedactTokens(msg))
	return ledger.RedactURL(msg)
}

// BindGlobalFlags binds the persistent flags every verb reads through f to pf (the root's).
func (f *Factory) BindGlobalFlags(pf *pflag.FlagSet) {
	pf.StringVar(&f.flags.databaseURL, "database-url", "",
		"PostgreSQL URL of the ledger (default: $REPLAYCTL_DATABASE_URL, then $DATABASE_URL, then the local socket, database test)")
	for _, spec := range f.flags.nats.Specs() {
		pf.StringVar(spec.Value, spec.Name, "", spec.Usage)
	}
	pf.BoolVar(&f.flags.json, "json", false, "print machine-readable JSON on stdout; logs stay on stderr")
	pf.StringVar(&f.flags.jq, "jq", "", "print only what this jq expression selects from the --json output (implies --json), e.g. --jq '.counts.completed'")
	pf.Var(NewDurationValue(&f.flags.progressInterval, DefaultProgressInterval), "progress-interval",
		"without a terminal (nohup, CI) or with --json, long commands (plan, shadow, execute, reconcile, prune) print a progress line on stderr this often (0: none)")
	pf.StringVar(&f.flags.actor, "actor", "", "operator recorded in the audit log (default: $USER, else the OS user)")
}

// StartOutput applies the output flags before a verb runs: --jq captures stdout until
// FinishOutput, --json makes the streams machine output, --progress-interval sets the cadence of
// progress lines.
func (f *Factory) StartOutput() error {
	if f.flags.jq != "" {
		code, err := CompileJQ(f.flags.jq)
		if err != nil {
			return err
		}
		f.jqOut = &JQOutput{code: code, out: f.IOStreams.Out, budget: defaultJQBudget}
		f.IOStreams.Out = f.jqOut
	}
	f.IOStreams.SetMachineOutput(f.JSON())
	if f.IOStreams.IsStdoutTTY() && !f.JSON() {
		// A person reads this on a terminal: lines fold at its width instead of where it cuts.
		f.fold = iostreams.NewFoldWriter(f.IOStreams.Out, iostreams.Width(f.IOStreams.Out))
		f.IOStreams.Out = f.fold
	}
	if f.flags.progressInterval < 0 {
		return UsageErrorf("--progress-interval %s: must be 0 (no progress lines) or positive, e.g. 30s", f.flags.progressInterval)
	}
	f.IOStreams.SetProgressInterval(f.flags.progressInterval)
	return nil
}

// FinishOutput prints what --jq selected from the captured document, once the verb ended; ctx
// (the command's) stops a filter that runs long.
func (f *Factory) FinishOutput(ctx context.Context) error {
	if fw := f.fold; fw != nil {
		f.IOStreams.Out, f.fold = fw.Unwrap(), nil
		if err := fw.Flush(); err != nil {
			return err
		}
	}
	j := f.jqOut
	if j == nil {
		return nil
	}
	f.IOStreams.Out, f.jqOut = j.out, nil
	return j.flush(ctx)
}

// rawActor is the actor as given: --actor, else $USER, else the OS user.
func (f *Factory) rawActor() string { return firstNonEmpty(f.flags.actor, os.Getenv("USER"), osUser()) }

// ActorGiven reports whether --actor was given (else the actor comes from the environment).
func (f *Factory) ActorGiven() bool { return f.flags.actor != "" }
