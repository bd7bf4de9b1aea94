package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countNames are the names docs/contract.md promises are counts (numbers) in every document;
// countNameExceptions the places that predate the rule, each with why it stays.
var (
	countNames          = []string{"uncertain", "failed", "completed", "published", "targets"}
	countNameExceptions = map[string]string{
		// The manifest is sealed by its digest: renaming a key refuses every manifest of an
		// unfinished job. Its lists get *Events names in the next apiVersion (docs/contract.md).
		"manifest.schema.json:.excluded.uncertain": "manifest v1",
		// A ledger-wide figure with its own parts (count, oldest), not a job's count.
		"ledger-stats.schema.json:.uncertain": "an object holding the count",
	}
)

// Every schema's property named like a count is a number: "uncertain" is never a list in one
// document and a number in another (issue 39 item 10).
func TestNamesOfCountsAreNumbersInEverySchema(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../docs/schemas/*.schema.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("schemas: %v (%d)", err, len(files))
	}
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		defs, _ := s["$defs"].(map[string]any)
		walkSchema(s, defs, filepath.Base(f), "", 0, func(path, name string, prop map[string]any) {
			for _, c := range countNames {
				if name != c {
					continue
				}
				checked++
				if countNameExceptions[filepath.Base(f)+":"+path] != "" {
					continue
				}
				if typ := schemaType(prop, defs); typ != "integer" && typ != "number" {
					t.Errorf("%s %s is %s; docs/contract.md says %q is always a count", filepath.Base(f), path, typ, name)
				}
			}
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d count names only: the walk no longer reads the schemas", checked)
	}
}

func schemaType(prop, defs map[string]any) string {
	if ref, ok := prop["$ref"].(string); ok && strings.HasPrefix(ref, "#/$defs/") {
		if d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
			return schemaType(d, defs)
		}
		return "ref"
	}
	switch t := prop["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if e != "null" {
				return e.(string)
			}
		}
	}
	return "untyped"
}

func walkSchema(s, defs map[string]any, file, path string, depth int, visit func(path, name string, prop map[string]any)) {
	if depth > 12 {
		return
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if prop, ok := p.(map[string]any); ok {
				visit(path+"."+name, name, prop)
				walkSchema(prop, defs, file, path+"."+name, depth+1, visit)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		walkSchema(items, defs, file, path+"[]", depth+1, visit)
	}
	if depth == 0 {
		for name, d := range defs {
			if def, ok := d.(map[string]any); ok {
				walkSchema(def, defs, file, "#"+name, depth+1, visit)
			}
		}
	}
}
