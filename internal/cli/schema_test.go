package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

// validateJSON checks a command's --json output against its schema under docs/schemas: a field
// renamed, retyped, added or dropped without the schema (the public contract) fails the test.
func validateJSON(t *testing.T, schema, output string) {
	t.Helper()
	sch, err := compileSchema(schema)
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(output))
	if err != nil {
		t.Fatalf("%s: the output is not JSON: %v\n%s", schema, err, output)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("the output breaks %s: %v\n%s", schema, err, output)
	}
}

// The schemas refuse what the contract does not have: a renamed field and a retyped one.
func TestTheOutputSchemasRefuseARenamedOrRetypedField(t *testing.T) {
	t.Parallel()
	sch, err := compileSchema("keys-policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	good := `{"apiVersion":"replayctl/v1","kind":"KeyPolicies","policies":[{"kind":"route","name":"POST /v1/charges","replayWindowSeconds":324000,"evidenceWindowSeconds":10692000,` +
		`"clientRetrySeconds":86400,"offlineResendSeconds":259200,"inquirySeconds":10368000,"irreversible":true,"expiredIsNew":false,` +
		`"registeredBy":"billing-api","registeredAt":"2026-12-06T13:24:01Z"}]}`
	for name, doc := range map[string]string{
		"renamed": strings.Replace(good, `"replayWindowSeconds"`, `"replayWindow"`, 1),
		"retyped": strings.Replace(good, `"irreversible":true`, `"irreversible":"yes"`, 1),
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("%s field accepted", name)
		}
	}
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(good))
	if err := sch.Validate(v); err != nil {
		t.Errorf("the contract's own example refused: %v", err)
	}
}

// schemaOf names each document kind's schema under docs/schemas: one per command (pause, resume
// and cancel share JobControl; show gives the manifest itself, or ManifestExport with -o).
var schemaOf = map[string]string{
	"Plan": "plan", "Validation": "validate", "Manifest": "manifest", "ManifestExport": "show-export",
	"ShadowReport": "shadow", "Execute": "execute", "Status": "status", "JobList": "jobs", "AuditLog": "log", "AuditVerification": "audit-verification",
	"Pace": "pace", "JobControl": "control", "Drain": "drain", "Reconcile": "reconcile",
	"ReconcileResolution": "reconcile-resolve", "LedgerStats": "ledger-stats", "LedgerPrune": "ledger-prune",
	"LedgerGrants": "ledger-grants", "LedgerImport": "ledger-import", "Migration": "migrate", "KeyPolicies": "keys-policy", "KeyStats": "keys-stats",
	"KeyRecords": "keys-records", "KeyResolution": "keys-resolve", "KeyPrune": "keys-prune", "Demo": "demo",
	"Approval": "approve", "ApprovalPolicies": "policy", "Inspection": "inspect",
	"Error": "error",
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
	dumped      atomic.Int64
)

// checkDocuments validates every JSON document a --json run printed (one, or one a line for
// status --watch) against its kind's schema: every command test is a contract test too. With
// REPLAYCTL_DUMP_JSON=DIR it also keeps each document under DIR/KIND/, the samples the schemas
// were first drawn from.
func checkDocuments(t *testing.T, stdout string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("--json printed something that is not JSON documents: %v\n%s", err, stdout)
			return
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if json.Unmarshal(raw, &head) != nil || head.APIVersion != cmdutil.OutputAPIVersion || schemaOf[head.Kind] == "" {
			t.Errorf("a --json document without apiVersion %s and a known kind:\n%.400s", cmdutil.OutputAPIVersion, raw)
			continue
		}
		if dir := os.Getenv("REPLAYCTL_DUMP_JSON"); dir != "" {
			_ = os.MkdirAll(filepath.Join(dir, head.Kind), 0o755)
			_ = os.WriteFile(filepath.Join(dir, head.Kind, fmt.Sprintf("%d.json", dumped.Add(1))), raw, 0o644)
			continue
		}
		validateDocument(t, schemaOf[head.Kind]+".schema.json", raw)
	}
}

// validateDocument is validateJSON with the compiled schemas kept for the whole run.
func validateDocument(t *testing.T, schema string, raw []byte) {
	t.Helper()
	schemaMu.Lock()
	sch, ok := schemaCache[schema]
	if !ok {
		var err error
		if sch, err = compileSchema(schema); err != nil {
			schemaMu.Unlock()
			t.Fatalf("schema %s: %v", schema, err)
		}
		schemaCache[schema] = sch
	}
	schemaMu.Unlock()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: the output is not JSON: %v", schema, err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("the output breaks %s: %v\n%.2000s", schema, err, raw)
	}
}

// schemaBase is the $id prefix of every schema under docs/schemas.
const schemaBase = "https://replayctl.dev/schemas/"

// compileSchema compiles docs/schemas/NAME with every schema there loaded under its $id, so a
// $ref to a shared definition (defs.schema.json) or to another document resolves offline.
func compileSchema(name string) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "schemas", "*.schema.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			return nil, err
		}
	}
	return c.Compile(schemaBase + name)
}

// Every schema compiles, its references resolved, and each document kind has one: a schema no
// test's output reaches (keys resolve, demo, ledger grants) still cannot rot into an invalid one.
func TestEverySchemaCompiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "schemas", "*.schema.json"))
	if err != nil || len(files) < len(schemaOf) {
		t.Fatalf("%d schemas for %d kinds: %v", len(files), len(schemaOf), err)
	}
	for _, f := range files {
		if _, err := compileSchema(filepath.Base(f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for kind, name := range schemaOf {
		if _, err := os.Stat(filepath.Join("..", "..", "docs", "schemas", name+".schema.json")); err != nil {
			t.Errorf("kind %s has no schema: %v", kind, err)
		}
	}
}
