package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateJSON checks a command's --json output against its schema under docs/schemas: a field
// renamed, retyped, added or dropped without the schema (the public contract) fails the test.
func validateJSON(t *testing.T, schema, output string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(filepath.Join("..", "..", "docs", "schemas", schema))
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
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("..", "..", "docs", "schemas", "keys-policy.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	good := `{"policies":[{"kind":"route","name":"POST /v1/charges","replayWindowSeconds":324000,"evidenceWindowSeconds":10692000,` +
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
