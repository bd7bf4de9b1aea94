package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
)

// Ledger is what an import needs of the ledger.
type Ledger interface {
	CheckConsumer(ctx context.Context, consumer string) error
	FingerprintAlgorithms(ctx context.Context, consumer string) ([]ledger.FingerprintAlgorithm, error)
	RetentionPoliciesList(ctx context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error)
	ImportEffects(ctx context.Context, consumer, actor string, rows []ledger.ImportedEffect, dryRun bool) (ledger.ImportBatchResult, error)
	ConsumerHistoryStart(ctx context.Context, consumer string) (time.Time, bool, error)
	AuditAppend(ctx context.Context, e ledger.AuditEntry) error
}

// ErrInvalidLines means lines of the file cannot be imported; nothing was written.
var ErrInvalidLines = fault.New(fault.Invalid, "lines of the import file cannot be imported")

// ErrCannotImport means the import was asked for wrongly (a flag, the file); nothing was written.
var ErrCannotImport = fault.New(fault.Invalid, "cannot import")

// DefaultBatchSize is how many rows one import transaction writes.
const DefaultBatchSize = 50_000

// Options say what to import.
type Options struct {
	Consumer string
	// EffectVersion is the version of a line that names none.
	EffectVersion int
	Path          string
	// Format is FormatJSONLines or FormatCSV; empty guesses from Path's extension.
	Format    string
	DryRun    bool
	BatchSize int
	// MaxErrors is how many bad lines are listed before the check stops listing (it still counts).
	MaxErrors int
	Actor     string
	Now       time.Time
	// Progress, when set, is called after each batch with the lines done and the total.
	Progress func(done, total int64)
}

// Report says what an import wrote, or for a dry run what it would write.
type Report struct {
	DryRun   bool   `json:"dryRun"`
	Consumer string `json:"consumer"`
	File     string `json:"file"`
	Format   string `json:"format"`
	// FileDigest is the sha256 of the file as checked, recorded in the audit log.
	FileDigest string `json:"fileDigest"`
	// Records are the lines holding an event; Imported of them were new to the ledger and
	// AlreadyInLedger were left as the ledger had them.
	Records         int64 `json:"records"`
	Imported        int64 `json:"imported"`
	AlreadyInLedger int64 `json:"alreadyInLedger"`
	Completed       int64 `json:"completed"`
	Uncertain       int64 `json:"uncertain"`
	// WithoutFingerprint counts rows the event ID alone will match (no requestHash in the file).
	WithoutFingerprint int64      `json:"withoutFingerprint"`
	OldestProcessedAt  *time.Time `json:"oldestProcessedAt"`
	NewestProcessedAt  *time.Time `json:"newestProcessedAt"`
	// HistoryStartsAt is the consumer's history start after the import (before, for a dry run).
	HistoryStartsAt *time.Time `json:"historyStartsAt"`
	Batches         int        `json:"batches"`
	BatchSize       int        `json:"batchSize"`
	Interrupted     bool       `json:"interrupted"`
	// InvalidLines counts the lines the check refused; Errors lists the first of them.
	InvalidLines int64       `json:"invalidLines"`
	Errors       []LineError `json:"errors"`
	Warnings     []string    `json:"warnings"`
}

// Import checks every line of the file first and writes nothing when one is bad; then it writes
// the rows in batches of BatchSize, each its own transaction. An interrupted import is continued
// by running it again: rows already in the ledger are counted, never written twice or changed.
func Import(ctx context.Context, store Ledger, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{DryRun: opts.DryRun, Consumer: opts.Consumer, File: opts.Path, Format: opts.Format, BatchSize: opts.BatchSize,
		Errors: []LineError{}, Warnings: []string{}}
	d, err := resolveDefaults(ctx, store, opts, rep)
	if err != nil {
		return nil, err
	}
	if err := check(ctx, opts, d, rep); err != nil {
		return rep, err
	}
	if rep.InvalidLines > 0 {
		return rep, fmt.Errorf("%w: %d of the file's lines (the first: %s); fix them and run the import again, nothing was written",
			ErrInvalidLines, rep.InvalidLines, rep.Errors[0].Error())
	}
	werr := write(ctx, store, opts, d, rep)
	if start, ok, err := store.ConsumerHistoryStart(context.WithoutCancel(ctx), opts.Consumer); err == nil && ok {
		rep.HistoryStartsAt = &start
		if opts.DryRun && rep.OldestProcessedAt != nil && rep.OldestProcessedAt.Before(start) {
			rep.HistoryStartsAt = rep.OldestProcessedAt
		}
	}
	if opts.DryRun || (rep.Imported == 0 && werr == nil) {
		return rep, werr
	}
	entry := ledger.AuditEntry{Actor: opts.Actor, Action: "ledger.import", Details: map[string]any{
		"consumer": opts.Consumer, "file": filepath.Base(opts.Path), "fileDigest": rep.FileDigest, "records": rep.Records,
		"imported": rep.Imported, "alreadyInLedger": rep.AlreadyInLedger, "interrupted": rep.Interrupted,
	}}
	if aerr := store.AuditAppend(context.WithoutCancel(ctx), entry); aerr != nil {
		return rep, errors.Join(werr, aerr)
	}
	return rep, werr
}

func (o Options) withDefaults() (Options, error) {
	if o.Consumer == "" {
		return o, fmt.Errorf("%w: an import needs --consumer: the consumer whose history the file holds", ErrCannotImport)
	}
	if o.Path == "" || o.Path == "-" {
		return o, fmt.Errorf("%w: an import needs a file (it is read twice: checked whole, then written); save standard input to a file first", ErrCannotImport)
	}
	if o.Format == "" {
		switch strings.ToLower(filepath.Ext(o.Path)) {
		case ".csv":
			o.Format = FormatCSV
		case ".jsonl", ".ndjson", ".json":
			o.Format = FormatJSONLines
		default:
			return o, fmt.Errorf("%w: cannot tell the format of %s from its extension: pass --format %s or --format %s", ErrCannotImport, o.Path, FormatJSONLines, FormatCSV)
		}
	}
	if o.Format != FormatJSONLines && o.Format != FormatCSV {
		return o, fmt.Errorf("%w: --format %q: want %s or %s", ErrCannotImport, o.Format, FormatJSONLines, FormatCSV)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = 20
	}
	if o.EffectVersion < 0 {
		return o, fmt.Errorf("%w: --effect-version %d is negative", ErrCannotImport, o.EffectVersion)
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o, nil
}

func resolveDefaults(ctx context.Context, store Ledger, opts Options, rep *Report) (*defaults, error) {
	d := &defaults{consumer: opts.Consumer, effectVersion: opts.EffectVersion, now: opts.Now,
		algorithms: map[string]bool{fingerprint.Algorithm: true}}
	if err := store.CheckConsumer(ctx, opts.Consumer); errors.Is(err, ledger.ErrUnknownConsumer) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the ledger has no rows, versions or jobs of consumer %s yet: "+
			"right for an import before its first deployment; otherwise check the name (%v)", opts.Consumer, err))
	} else if err != nil {
		return nil, err
	}
	algs, err := store.FingerprintAlgorithms(ctx, opts.Consumer)
	if err != nil {
		return nil, err
	}
	for _, a := range algs {
		d.algorithms[a.Algorithm] = true
	}
	policies, err := store.RetentionPoliciesList(ctx, apikey.PolicyConsumer, opts.Consumer)
	if err != nil {
		return nil, err
	}
	if len(policies) > 0 {
		d.replayWindow, d.evidenceWindow = policies[0].ReplayWindow, policies[0].EvidenceWindow
	} else {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("consumer %s has registered no retention policy: lines without replayUntil "+
			"and evidenceUntil are kept until a prune with dates set; start the consumer once (its SDK registers its policy) before importing to date them", opts.Consumer))
	}
	return d, nil
}

// checkEvery is how many lines check reads between looks at ctx: a Ctrl-C stops the check of a
// large file at once, not after its last line.
const checkEvery = 10_000

// check reads the whole file once: it counts, digests and validates every line without writing.
func check(ctx context.Context, opts Options, d *defaults, rep *Report) error {
	f, err := os.Open(opts.Path)
	if err != nil {
		return fmt.Errorf("%w: open the import file: %w", ErrCannotImport, err)
	}
	defer f.Close()
	h := sha256.New()
	lines, err := newLineReader(opts.Format, io.TeeReader(f, h))
	if err != nil {
		return rep.refuse(err, opts.MaxErrors)
	}
	for read := 1; ; read++ {
		if read%checkEvery == 0 && ctx.Err() != nil {
			rep.Interrupted = true
			return fmt.Errorf("the check of %s stopped after %d lines (%w); nothing was written: run the import again", opts.Path, read, context.Cause(ctx))
		}
		line, r, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if rerr := rep.refuse(err, opts.MaxErrors); rerr != nil {
				return rerr
			}
			continue
		}
		e, le := d.toEffect(line, r)
		if le != nil {
			rep.refuse(le, opts.MaxErrors)
			continue
		}
		rep.count(e)
	}
	io.Copy(h, f)
	rep.FileDigest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
}

// refuse lists a bad line; any other error (an unreadable file) is returned.
func (rep *Report) refuse(err error, most int) error {
	le, ok := errors.AsType[*LineError](err)
	if !ok {
		return fmt.Errorf("read the import file: %w", err)
	}
	rep.InvalidLines++
	if len(rep.Errors) < most {
		rep.Errors = append(rep.Errors, *le)
	}
	return nil
}

func (rep *Report) count(e ledger.ImportedEffect) {
	rep.Records++
	if e.State == "uncertain" {
		rep.Uncertain++
	} else {
		rep.Completed++
	}
	if e.RequestHashAlg == fingerprint.AlgorithmNone {
		rep.WithoutFingerprint++
	}
	t := e.ProcessedAt.UTC()
	if rep.OldestProcessedAt == nil || t.Before(*rep.OldestProcessedAt) {
		rep.OldestProcessedAt = &t
	}
	if rep.NewestProcessedAt == nil || t.After(*rep.NewestProcessedAt) {
		t := t
		rep.NewestProcessedAt = &t
	}
}

// write reads the checked file again and writes it in batches.
func write(ctx context.Context, store Ledger, opts Options, d *defaults, rep *Report) error {
	f, err := os.Open(opts.Path)
	if err != nil {
		return fmt.Errorf("open the import file again: %w", err)
	}
	defer f.Close()
	lines, err := newLineReader(opts.Format, f)
	if err != nil {
		return fmt.Errorf("read the import file again: %w", err)
	}
	batch := make([]ledger.ImportedEffect, 0, opts.BatchSize)
	var done int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			rep.Interrupted = true
			return fmt.Errorf("import of consumer %s interrupted after %d of %d records (%w); run the same command again to continue", opts.Consumer, done, rep.Records, context.Cause(ctx))
		}
		res, err := store.ImportEffects(ctx, opts.Consumer, opts.Actor, batch, opts.DryRun)
		if err != nil {
			rep.Interrupted = true
			return fmt.Errorf("%w; the %d records before this batch are written: run the same command again to continue", err, done)
		}
		rep.Imported += res.Inserted
		rep.AlreadyInLedger += res.Present
		rep.Batches++
		done += int64(len(batch))
		batch = batch[:0]
		if opts.Progress != nil {
			opts.Progress(done, rep.Records)
		}
		return nil
	}
	for {
		line, r, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the import file changed since it was checked (line %d: %v); nothing after the %d records written is imported: run the import again", line, err, done)
		}
		e, le := d.toEffect(line, r)
		if le != nil {
			return fmt.Errorf("the import file changed since it was checked (%v); run the import again", le)
		}
		batch = append(batch, e)
		if len(batch) == opts.BatchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
