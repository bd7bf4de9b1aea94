package shadow

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDiffResultsNamesEveryDifferingPathOnce(t *testing.T) {
	t.Parallel()
	a := `{"amountCents": 1200, "feeCents": 12, "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}],
	       "meta": {"region": "eu", "gone": true}, "tags": ["x"], "n": 1.0}`
	b := `{"amountCents": 1200, "feeCents": 17, "lines": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}],
	       "meta": {"region": "eu", "added": null}, "tags": ["x", "y"], "n": 1}`
	diffs, err := diffResults(json.RawMessage(a), json.RawMessage(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	var order []string
	for _, d := range diffs {
		got[d.path] = [2]string{string(d.a), string(d.b)}
		order = append(order, d.path)
	}
	want := map[string][2]string{
		"feeCents":     {"12", "17"},
		"lines[*].sku": {`"a"`, `"A"`}, // the first differing element
		"meta.added":   {"", "null"},   // absent on one side, null on the other
		"meta.gone":    {"true", ""},
		"tags":         {`["x"]`, `["x","y"]`}, // arrays of different lengths differ as a whole
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("diffs\n got %v\nwant %v", got, want)
	}
	if !reflect.DeepEqual(order, []string{"feeCents", "lines[*].sku", "meta.added", "meta.gone", "tags"}) {
		t.Fatalf("paths %v not sorted", order)
	}

	root, err := diffResults(json.RawMessage(`"ok"`), json.RawMessage(`{"status": "ok"}`))
	if err != nil || len(root) != 1 || root[0].path != rootPath {
		t.Fatalf("a whole-result change: %+v (%v), want one difference at %s", root, err, rootPath)
	}
}

func TestClassifyPrefersIgnoredOverNoiseAndCoversSubpaths(t *testing.T) {
	t.Parallel()
	diffs := []difference{{path: "feeCents"}, {path: "lines[*].sku"}, {path: "meta.trace.id"}, {path: "processedAt"}, {path: "receipt"}}
	c := classify(diffs, newPathSet([]string{"lines", "processedAt"}), newPathSet([]string{"meta.trace", "processedAt"}))
	var changed []string
	for _, f := range c.changed {
		changed = append(changed, f.Path)
	}
	if !reflect.DeepEqual(changed, []string{"feeCents", "receipt"}) ||
		!reflect.DeepEqual(c.ignored, []string{"lines[*].sku", "processedAt"}) ||
		!reflect.DeepEqual(c.noise, []string{"meta.trace.id"}) {
		t.Fatalf("classified %+v", c)
	}
	if newPathSet([]string{"fee"}).covers("feeCents") {
		t.Fatal(`"fee" covers "feeCents": a prefix of a key is not a parent path`)
	}
	if !newPathSet([]string{"[*]"}).covers("[*].sku") {
		t.Fatal(`"[*]" does not cover the elements of a top-level array`)
	}
}

func TestValidatePath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"processedAt", "lines[*].sku", "a.b.c", "[*].id", "matrix[*][*]", "x-request-id"} {
		if err := validatePath(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "a.", "a..b", "lines[0]", "lines[*]sku", "a b", "a[*", "[*]x"} {
		if validatePath(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
