package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
)

// worldState is everything a refused command must leave as it was: every ledger table, both
// streams, and the files next to the manifest. The audit log is kept as its actions, since a gate
// refusal is recorded there on purpose.
type worldState struct {
	tables map[string]string
	audit  []string
	dlq    uint64
	stream uint64
	files  map[string]string
}

// ledgerTables are the tables a command writes besides the audit log; their whole content is compared.
var ledgerTables = []string{"jobs", "job_targets", "effect_versions", "effects", "shadow_verdicts"}

func (w *execWorld) state(t *testing.T, dirs ...string) worldState {
	t.Helper()
	s := worldState{tables: map[string]string{}, files: map[string]string{}, stream: w.StreamMessages()}
	for _, table := range ledgerTables {
		var sum string
		q := fmt.Sprintf(`select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from %s x`, table)
		if err := w.DB.QueryRow(w.Ctx, q).Scan(&sum); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		s.tables[table] = sum
	}
	rows, err := w.DB.Query(w.Ctx, `select action from audit order by id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var action string
		if err := rows.Scan(&action); err != nil {
			t.Fatal(err)
		}
		s.audit = append(s.audit, action)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	dlq, err := w.NATS.JS.Stream(w.Ctx, exectest.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dlq.Info(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.dlq = info.State.LastSeq
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			s.files[filepath.Join(dir, e.Name())] = hex.EncodeToString(sum[:])
		}
	}
	return s
}

// assertUnchanged names everything that differs between before and after, where the audit log may
// only have gained the entry audited (none when empty).
func assertUnchanged(t *testing.T, before, after worldState, audited string) {
	t.Helper()
	for _, table := range ledgerTables {
		if before.tables[table] != after.tables[table] {
			t.Errorf("table %s changed", table)
		}
	}
	want := before.audit
	if audited != "" {
		want = append(slices.Clone(want), audited)
	}
	if !slices.Equal(after.audit, want) {
		t.Errorf("audit log is %v, want %v", after.audit, want)
	}
	if before.dlq != after.dlq {
		t.Errorf("the DLQ stream's last sequence moved from %d to %d", before.dlq, after.dlq)
	}
	if before.stream != after.stream {
		t.Errorf("%d messages were published to %s", after.stream-before.stream, exectest.Stream)
	}
	for path, sum := range after.files {
		if before.files[path] == "" {
			t.Errorf("file %s was created", path)
		} else if before.files[path] != sum {
			t.Errorf("file %s was changed", path)
		}
	}
	for path := range before.files {
		if after.files[path] == "" {
			t.Errorf("file %s was removed", path)
		}
	}
}

// badInput is one refused invocation: the exit code, and what the message must say (what was
// wrong, and where it exists, what to do).
type badInput struct {
	name  string
	args  string
	code  int
	wants []string
	// audited is the one audit action the refusal records: execute audits a gate's refusal, since
	// a refused run is a decision too (executor/gates.go).
	audited string
}

// usage is a case refused as bad input (exit 2).
func usage(name, args string, wants ...string) badInput {
	return badInput{name: name, args: args, code: cmdutil.ExitUsage, wants: wants}
}

// gated is a case a gate refuses (exit 3), recording audited in the audit log if not empty.
func gated(name, args, audited string, wants ...string) badInput {
	return badInput{name: name, args: args, code: cmdutil.ExitGateRefused, wants: wants, audited: audited}
}

// refuseAll runs each case with and without --json against w, and checks the exit code, the
// message on stderr and in the JSON error object, and that nothing changed anywhere.
func refuseAll(t *testing.T, w *execWorld, dirs []string, cases []badInput) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := w.state(t, dirs...)
			stdout, stderr, code := w.replayctl(t, tc.args)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s\n%s", code, tc.code, stdout, clip.Runes(stderr, 2000))
			}
			if lacks := lacking(stderr, tc.wants...); lacks != "" {
				t.Errorf("stderr lacks %q:\n%s", lacks, clip.Runes(stderr, 2000))
			}
			if len(stderr) > 8<<10 {
				t.Errorf("stderr is %d bytes: a refusal quotes bad values clipped", len(stderr))
			}
			between := w.state(t, dirs...)
			assertUnchanged(t, before, between, tc.audited)

			stdout, _, code = w.replayctl(t, "--json "+tc.args)
			if msg, jsonCode := errorDocument(t, stdout); code != tc.code || jsonCode != tc.code {
				t.Errorf("--json: exit %d, exitCode %d, want %d", code, jsonCode, tc.code)
			} else if lacks := lacking(msg, tc.wants...); lacks != "" {
				t.Errorf("--json: error lacks %q: %s", lacks, clip.Runes(msg, 2000))
			}
			assertUnchanged(t, between, w.state(t, dirs...), tc.audited)
		})
	}
}

// errorDocument decodes stdout as one JSON document carrying error and exitCode: the error object
// of every command, or validate's report, which lists the problems beside them. It returns the
// error with the problems.
func errorDocument(t *testing.T, stdout string) (msg string, code int) {
	t.Helper()
	var doc struct {
		Error    *string  `json:"error"`
		ExitCode *int     `json:"exitCode"`
		Problems []string `json:"problems"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&doc); err != nil || dec.More() || doc.Error == nil || doc.ExitCode == nil {
		t.Fatalf("stdout is not one JSON document with error and exitCode (%v):\n%s", err, clip.Runes(stdout, 2000))
	}
	return strings.Join(append([]string{*doc.Error}, doc.Problems...), "\n"), *doc.ExitCode
}

// resealed writes m, changed by edit and sealed again as a forger with the source would, to dir.
func resealed(t *testing.T, dir, name string, m *manifest.Manifest, edit func(*manifest.Manifest)) string {
	t.Helper()
	c := *m
	c.EventIDs = slices.Clone(m.EventIDs)
	edit(&c)
	if err := manifest.Seal(&c); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := manifest.WriteFile(path, &c); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeEdited writes the manifest at src with its first old replaced by new, as a hand edit would.
func writeEdited(t *testing.T, src, dst, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", src, old)
	}
	if err := os.WriteFile(dst, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestBadInputManifests(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	m := w.Shadowed(5, "job-bad-input")
	job := w.ManifestPath()
	bad := t.TempDir()
	data, err := os.ReadFile(job)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, content []byte) string {
		path := filepath.Join(bad, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	malformed := write("malformed.json", []byte(`{"apiVersion": "replayctl/v1", "id": job-bad-input}`))
	truncated := write("truncated.json", data[:len(data)/2])
	nonUTF8 := writeEdited(t, job, filepath.Join(bad, "nonutf8.json"), `"evt-00004"`, "\"evt-00004\xff\"")
	emptyID := writeEdited(t, job, filepath.Join(bad, "emptyid.json"), `"evt-00000"`, `""`)
	longID := writeEdited(t, job, filepath.Join(bad, "longid.json"), `"evt-00004"`, `"evt-00004`+strings.Repeat("x", 10<<10)+`"`)
	dupKey := writeEdited(t, job, filepath.Join(bad, "dupkey.json"), `"writeForbidden": false`, `"writeForbidden": true, "writeForbidden": false`)
	// encoding/json would take each of these keys for the field beside it (it folds case, Unicode
	// included); the file must be refused whichever value it would keep.
	caseVariants := []struct{ name, file, old, new, key, path string }{
		{"WriteForbidden", "writeforbidden.json", `"writeForbidden": false`, `"WriteForbidden": true, "writeForbidden": false`, "WriteForbidden", "$"},
		{"EventIds", "eventids.json", `"eventIds": [`, `"EventIds": ["evt-00001"], "eventIds": [`, "EventIds", "$"},
		{"EVENTIDS", "eventids-upper.json", `"eventIds": [`, `"eventIds": ["evt-00001"], "EVENTIDS": [`, "EVENTIDS", "$"},
		{"Reason", "reason-nested.json", `"reason": "Dlq-Reason"`, `"Reason": "Event-Id", "reason": "Dlq-Reason"`, "Reason", "$.source.headers"},
		{"reaſon (U+017F)", "reason-long-s.json", `"reason": `, `"reaſon": "nobody reviewed this reason", "reason": `, "reaſon", "$"},
	}
	edited := writeEdited(t, job, filepath.Join(bad, "otherconsumer-edited.json"), `"consumer": "billing"`, `"consumer": "shipping"`)
	otherConsumer := resealed(t, bad, "otherconsumer-resealed.json", m, func(c *manifest.Manifest) { c.Consumer = "shipping" })
	noJob := resealed(t, bad, "nojob.json", m, func(c *manifest.Manifest) { c.ID = "job-never-planned" })
	// A manifest older than its job: the ledger's job row now records another digest, as if the
	// job had been planned again under the same ID after this file was written.
	stale := write("stale.json", data)
	if _, err := w.DB.Exec(w.Ctx, `update jobs set manifest_digest = $1 where id = $2`,
		"sha256:"+strings.Repeat("0", 64), m.ID); err != nil {
		t.Fatal(err)
	}

	var cases []badInput
	invalid := []struct {
		name, path string
		wants      []string
	}{
		{"malformed JSON", malformed, []string{"malformed.json", "invalid manifest", "line 1"}},
		{"truncated", truncated, []string{"truncated.json", "truncated file"}},
		{"non-UTF-8 event ID", nonUTF8, []string{"nonutf8.json", "invalid UTF-8", "line "}},
		{"empty event ID", emptyID, []string{"emptyid.json", "eventIds[0]", "event ID is empty"}},
		{"10 KB event ID", longID, []string{"longid.json", "eventIds[4]", "the limit is 256"}},
		{"duplicated key", dupKey, []string{"dupkey.json", `key "writeForbidden" appears twice`, "re-run `replayctl plan`"}},
	}
	for _, v := range caseVariants {
		path := writeEdited(t, job, filepath.Join(bad, v.file), v.old, v.new)
		invalid = append(invalid, struct {
			name, path string
			wants      []string
		}{"case-variant key " + v.name, path, []string{v.file, fmt.Sprintf("unknown field %q in %s", v.key, v.path), "case-sensitive", "re-run `replayctl plan`"}})
	}
	for _, c := range invalid {
		for _, verb := range []string{"validate", "validate --ledger", "show", "shadow", "execute --yes", "execute --dry-run"} {
			cases = append(cases, usage(c.name+"/"+verb, verb+" "+c.path, c.wants...))
		}
	}
	// The contract (docs/contract.md) lists a tampered or stale manifest with the gates (exit 3): the file is sound, but it
	// is not the job that was planned.
	for _, verb := range []string{"validate", "show", "shadow", "execute --yes"} {
		cases = append(cases, gated("edited for another consumer/"+verb, verb+" "+edited, "", "tampered", "re-run `replayctl plan`"))
	}
	for _, c := range []struct{ name, path string }{{"resealed for another consumer", otherConsumer}, {"older than its job", stale}} {
		cases = append(cases,
			gated(c.name+"/shadow", "shadow "+c.path, "", m.ID, "digest"),
			gated(c.name+"/execute", "execute --yes "+c.path, "execute.refused", "manifest-is-the-job", m.ID),
			gated(c.name+"/validate --ledger", "validate --ledger "+c.path, "", m.ID, "was recorded with digest", "re-run `replayctl plan`"),
		)
	}
	cases = append(cases,
		usage("belongs to no job/validate --ledger", "validate --ledger "+noJob, "no job job-never-planned", "re-run `replayctl plan`"),
		gated("belongs to no job/shadow", "shadow "+noJob, "", "job-never-planned"),
		gated("belongs to no job/execute", "execute --yes "+noJob, "execute.refused", "job-never-planned"),
	)
	refuseAll(t, w, []string{w.Dir, bad}, cases)
}

func TestBadInputFlags(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Shadowed(3, "job-bad-flags")
	job := w.ManifestPath()
	out := filepath.Join(t.TempDir(), "new.json")
	outDir := filepath.Dir(out)
	plan := "plan --stream " + exectest.DLQStream + " -o " + out + " "
	planFor := func(consumer string) string {
		return plan + `--consumer "` + consumer + `" --reason '` + planReason + "'"
	}
	planWith := func(flags string) string { return plan + "--consumer billing --reason '" + planReason + "' " + flags }
	consumerRule := []string{"--consumer", "is not allowed", "use 1-64 characters from A-Z a-z 0-9 _ -"}
	cases := []badInput{
		usage("consumer SQL-shaped", planFor("'; drop table effects; --"), consumerRule...),
		usage("consumer with NUL", planFor("billing\x00"), consumerRule...),
		usage("consumer 300 characters", planFor(strings.Repeat("b", 300)), consumerRule...),
		usage("consumer with a space", planFor("bill ing"), consumerRule...),
		usage("consumer with a dot", planFor("billing.eu"), consumerRule...),
		usage("consumer star", planFor("billing*"), consumerRule...),
		usage("consumer wildcard token", planFor(">"), consumerRule...),
		usage("since banana", planWith("--since banana"), "--since \"banana\"", "want an RFC 3339 time"),
		usage("since in the future", planWith("--since 2999-01-01"), "--since 2999-01-01T00:00:00Z is in the future", "give a past time"),
		usage("reason 1 MB", plan+"--consumer billing --reason '"+strings.Repeat("outage fixed now ", 62000)+"'",
			"--reason", "the limit is 2000", "put the details in the ticket"),
		usage("reason with a terminal escape", plan+"--consumer billing --reason '"+planReason+"\x1b[2J'",
			"--reason", "control character U+001B", "retype it as plain text"),
		usage("ticket with NUL", planWith("--ticket 'INC-1\x00'"), "--ticket", "control character U+0000"),
		usage("effect version over int32", planWith("--effect-version 3000000000"), "--effect-version 3000000000", "between 1 and 2147483647"),
		usage("max negative", planWith("--max -1"), "--max -1", "0 (no limit) or more"),
		usage("subject filter empty token", planWith("--subject 'dlq..charge'"), "--subject", "empty token"),
		usage("stream with a dot", "plan --consumer billing --stream DLQ.BILLING -o "+out+" --reason '"+planReason+"'", "--stream", "is not allowed"),

		usage("rate negative", "execute --yes --rate -1 "+job, "--rate -1", "up to 1000000"),
		usage("rate 1e12", "execute --yes --rate 1e12 "+job, "--rate 1e+12", "0 (no limit)"),
		usage("max-in-flight 0", "execute --yes --max-in-flight 0 "+job, "--max-in-flight 0", "at least 1"),
		usage("max-error-ratio 2", "execute --yes --max-error-ratio 2 "+job, "--max-error-ratio 2", "between 0 and 1"),
		usage("max-retrying-ratio 1.5", "execute --yes --max-retrying-ratio 1.5 "+job, "--max-retrying-ratio 1.5", "between 0 and 1"),
		usage("max-drift 2", "execute --yes --max-drift 2 "+job, "--max-drift 2", "between 0 and 1"),
		usage("settle-timeout 0", "execute --yes --settle-timeout 0s "+job, "--settle-timeout", "must be positive"),
		usage("durable with a terminal escape", "execute --yes --durable 'billing\x1b[2J' "+job, `--durable "billing\x1b[2J"`, "control character"),
		usage("durable with a dot", "execute --yes --durable billing.eu "+job, `--durable "billing.eu"`, "not a JetStream consumer name"),

		usage("concurrency 0", "shadow --concurrency 0 "+job, "--concurrency 0", "between 1 and 1024"),
		usage("concurrency 1e9", "shadow --concurrency 1e9 "+job, "--concurrency", `invalid argument "1e9"`),
		usage("concurrency 1000000000", "shadow --concurrency 1000000000 "+job, "--concurrency 1000000000", "between 1 and 1024"),
		usage("sample -5", "shadow --sample -5 "+job, "--sample -5", "at least 1"),
		usage("shadow max-error-ratio 2", "shadow --max-error-ratio 2 "+job, "--max-error-ratio 2", "between 0 and 1"),

		usage("status of an SQL-shaped job", "status \"'; drop table jobs; --\"", "drop table jobs"),
		usage("cancel an SQL-shaped job", "cancel --reason 'wrong filter' \"'; drop table jobs; --\"", "drop table jobs"),
		usage("cancel reason 1 MB", "cancel --reason '"+strings.Repeat("wrong filter ", 80000)+"' job-bad-flags",
			"cancel refused", "--reason is 1040000 characters", "the limit is 2000"),
		usage("pause reason with a terminal escape", "pause --reason 'error rate rising\x1b[2J' job-bad-flags",
			"pause refused", "control character U+001B"),
	}
	refuseAll(t, w, []string{w.Dir, outDir}, cases)
}

// TestBadInputActor gives every command that records its operator an --actor that is not a plain
// name: each is refused before anything is read or written, like --reason, and the refusal
// quotes it escaped, so the terminal showing the error does not obey it either.
func TestBadInputActor(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Shadowed(3, "job-bad-actor")
	job := w.ManifestPath()
	out := filepath.Join(t.TempDir(), "new.json")
	commands := map[string]string{
		"plan":    "plan --stream " + exectest.DLQStream + " -o " + out + " --consumer billing --reason '" + planReason + "'",
		"shadow":  "shadow " + job,
		"execute": "execute --yes " + job,
		"pause":   "pause --reason 'error rate rising' job-bad-actor",
		"prune":   "ledger prune --consumer billing --yes",
	}
	for _, a := range []struct {
		name, actor string
		wants       []string
	}{
		{"OSC title sequence", "eve\x1b]0;PWNED\x1b\\", []string{`--actor "eve\x1b]0;PWNED\x1b\\"`, "control character U+001B", "retype it as plain text"}},
		{"C1 CSI", "eve\u009b2J", []string{`--actor "eve\u009b2J"`, "control character U+009B"}},
		{"newline", "eve\nmallory", []string{`--actor "eve\nmallory"`, "control character U+000A"}},
		{"300 characters", strings.Repeat("e", 300), []string{"--actor", "is 300 characters; the limit is 200"}},
	} {
		actorWorld := &execWorld{Env: w.Env, flags: strings.Replace(w.flags, "--actor alice", "--actor '"+a.actor+"'", 1)}
		var cases []badInput
		for verb, args := range commands {
			cases = append(cases, usage(a.name+"/"+verb, args, a.wants...))
		}
		refuseAll(t, actorWorld, []string{w.Dir, filepath.Dir(out)}, cases)
		if _, stderr, _ := actorWorld.replayctl(t, commands["pause"]); strings.ContainsAny(stderr, "\x1b\u009b") {
			t.Errorf("%s: the refusal prints the control character raw: %q", a.name, stderr)
		}
	}
}

// TestStatusEscapesLedgerText writes control characters straight into the ledger rows status
// reads (a job's reason, who paused it and why), as a writer that
// bypassed replayctl's checks could, and checks status shows them escaped, not obeyed.
func TestStatusEscapesLedgerText(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Shadowed(3, "job-escapes")
	const osc = "\x1b]0;PWNED\x1b\\"
	if _, err := w.DB.Exec(w.Ctx, `update jobs set reason = $1, status_reason = $2, status_by = $3 where id = $4`,
		"outage fixed"+osc, "paused\nexecutor: none attached", "eve"+osc, "job-escapes"); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := w.replayctl(t, "status job-escapes")
	if code != cmdutil.ExitOK {
		t.Fatalf("status: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if strings.ContainsAny(stdout+stderr, "\x1b\u009b") {
		t.Errorf("status printed a control character raw:\n%q", stdout)
	}
	for _, want := range []string{`reason: outage fixed\x1b]0;PWNED\x1b\`, ` by eve\x1b]0;PWNED\x1b\`, `because: paused\nexecutor: none attached`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status does not show %s escaped:\n%s", want, stdout)
		}
	}
	// --json carries the values as they are: JSON escapes them, and a script needs the real text.
	if got := w.statusJSON(t, "job-escapes"); got.StatusBy != "eve"+osc {
		t.Errorf("status --json statusBy = %q, want the stored value", got.StatusBy)
	}
}

// TestPlanCountsUnusableDLQMessages plans a DLQ holding messages a foreign producer could write:
// a payload just under the server's 1 MB limit, payloads that are not JSON, and original subjects
// execute could never publish to. The big and non-JSON payloads are targets like any other (only
// their fingerprint is kept); the unroutable ones are counted and excluded, instead of failing
// the whole plan on the first one PostgreSQL refuses to store.
func TestPlanCountsUnusableDLQMessages(t *testing.T) {
	t.Parallel()
	dbURL, env := newLedgerAndDLQ(t)
	big := []byte(strings.Repeat("P", 1000*1000))
	for i, m := range []struct {
		payload []byte
		subject string
	}{
		{[]byte(`{"orderId":"ord-1"}`), "billing.charge.requested"},
		{big, "billing.charge.requested"},
		{[]byte("\xff\xfe not JSON at all"), "billing.charge.requested"},
		{[]byte(`{"orderId":"ord-4"}`), "billing.*"},
		{[]byte(`{"orderId":"ord-5"}`), "billing.charge.>"},
		{[]byte(`{"orderId":"ord-6"}`), "billing..charge"},
		{[]byte(`{"orderId":"ord-7"}`), "billing.\xff"},
		{[]byte(`{"orderId":"ord-8"}`), "billing.\x00"},
	} {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = m.payload
		msg.Header.Set("Event-Id", fmt.Sprintf("evt-%d", i+1))
		msg.Header.Set("Dlq-Reason", "provider timeout")
		msg.Header.Set("Dlq-Original-Subject", m.subject)
		if _, err := env.JS.PublishMsg(t.Context(), msg); err != nil {
			t.Fatalf("publish message %d: %v", i+1, err)
		}
	}
	out := filepath.Join(t.TempDir(), "job.json")
	stdout, stderr, code := runCommand(t, false, "plan --json --database-url '"+dbURL+"' --nats-url "+env.Server.ClientURL()+
		" --consumer billing --new-consumer --stream DLQ --reason '"+planReason+"' -o "+out)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, stdout, stderr)
	}
	m, err := manifest.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evt-1", "evt-2", "evt-3"}; !slices.Equal(m.EventIDs, want) {
		t.Errorf("targets %v, want %v", m.EventIDs, want)
	}
	if m.Stats.Scanned != 8 || m.Stats.MissingOriginalSubject != 5 {
		t.Errorf("scanned %d, missingOriginalSubject %d; want 8 and 5", m.Stats.Scanned, m.Stats.MissingOriginalSubject)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 16<<10 || strings.Contains(string(data), "PPPP") || strings.Contains(string(data), "not JSON") {
		t.Errorf("the manifest (%d bytes) carries payload: it must hold IDs, hashes and counts only", len(data))
	}
}
