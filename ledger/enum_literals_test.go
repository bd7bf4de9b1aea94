package ledger_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// enumLiteralExceptions are comparisons whose column name is also an enum column of another
// table, against values of their own: column -> literal -> why it is not that enum.
var enumLiteralExceptions = map[string]map[string]string{
	// reconcile.go's VALUES list of look-up verdicts (v.verdict), not shadow_verdicts.verdict.
	"verdict": {"happened": "look-up verdicts", "not_happened": "look-up verdicts", "unknown": "look-up verdicts"},
	// shadow.go's unnest of shadow outcomes (o.status), stored as job_targets.shadow_status.
	"status": {"ok": "shadow statuses", "error": "shadow statuses"},
}

// enumValues reads the values each column's check constraint allows, from the migrated schema
// itself: column -> allowed literals, over every table with such a column.
func enumValues(t *testing.T) map[string][]string {
	t.Helper()
	store := pgtest.Ledger(t)
	rows, err := store.Pool().Query(t.Context(), `
select pg_get_constraintdef(oid) from pg_constraint
 where contype = 'c' and connamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// CHECK ((state = ANY (ARRAY['received'::text, ...]))) or CHECK ((review_state = 'x'::text))
	anyOf := regexp.MustCompile(`^CHECK \(\((\w+) = ANY \(ARRAY\[(.*)\]\)\)\)$`)
	single := regexp.MustCompile(`^CHECK \(\((\w+) = ('[^']*'::text)\)\)$`)
	literal := regexp.MustCompile(`'([^']*)'::text`)
	values := map[string][]string{}
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			t.Fatal(err)
		}
		m := anyOf.FindStringSubmatch(def)
		if m == nil {
			m = single.FindStringSubmatch(def)
		}
		if m == nil {
			continue
		}
		for _, l := range literal.FindAllStringSubmatch(m[2], -1) {
			values[m[1]] = append(values[m[1]], l[1])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(values) < 5 {
		t.Fatalf("found check constraints on %d columns only: the parser no longer reads pg_get_constraintdef's form", len(values))
	}
	return values
}

// TestEveryEnumLiteralTheLedgerComparesIsAValueItsCheckConstraintAllows reads the ledger's SQL
// (every non-test Go file of the package) for comparisons of an enum column with a literal,
// col = 'x', col <> 'x' and col [not] in ('x', 'y'), and fails on a literal the column's check
// constraint does not allow: a statement that can never match, as the claim that compared
// resolution with 'not-happened' after migration 0025 renamed the value.
func TestEveryEnumLiteralTheLedgerComparesIsAValueItsCheckConstraintAllows(t *testing.T) {
	t.Parallel()
	values := enumValues(t)
	checked := 0
	for file, src := range ledgerSources(t) {
		for column, allowed := range values {
			for _, lit := range comparedLiterals(src, column) {
				checked++
				if slices.Contains(allowed, lit.value) || enumLiteralExceptions[column][lit.value] != "" {
					continue
				}
				t.Errorf("%s:%d compares %s with %q, which its check constraint does not allow (%s): the statement can never match",
					file, lit.line, column, lit.value, strings.Join(allowed, ", "))
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d comparisons only: the scanner no longer finds the ledger's SQL", checked)
	}
}

// TestTheAPIRecordsEnumsMatchTheirCheckConstraints holds apikey's states and resolutions to the
// values api_keys allows: a Go value the table refuses fails every write of it.
func TestTheAPIRecordsEnumsMatchTheirCheckConstraints(t *testing.T) {
	t.Parallel()
	values := enumValues(t)
	for _, s := range []apikey.State{apikey.StateReceived, apikey.StateProcessing, apikey.StateCompleted,
		apikey.StateUncertain, apikey.StateExpired, apikey.StateReconciled} {
		if !slices.Contains(values["state"], string(s)) {
			t.Errorf("apikey state %q is not allowed by any state check constraint", s)
		}
	}
	for _, r := range []apikey.Resolution{apikey.ResolutionHappened, apikey.ResolutionNotHappened} {
		if !slices.Contains(values["resolution"], string(r)) {
			t.Errorf("apikey resolution %q is not allowed by api_keys' check constraint %v", r, values["resolution"])
		}
	}
}

// ledgerSources returns the package's non-test Go sources by file name: where its SQL is.
func ledgerSources(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out[file] = string(src)
	}
	return out
}

type comparedLiteral struct {
	value string
	line  int
}

// comparedLiterals finds the literals src compares column with, qualified or not.
func comparedLiterals(src, column string) []comparedLiteral {
	col := `(?:^|[^\w.])(?:\w+\.)?` + regexp.QuoteMeta(column)
	eq := regexp.MustCompile(col + `\s*(?:=|<>|!=)\s*'([^']*)'`)
	in := regexp.MustCompile(`(?i)` + col + `\s+(?:not\s+)?in\s*\(\s*('[^']*'(?:\s*,\s*'[^']*')*)\s*\)`)
	quoted := regexp.MustCompile(`'([^']*)'`)
	var out []comparedLiteral
	lineOf := func(offset int) int { return strings.Count(src[:offset], "\n") + 1 }
	for _, m := range eq.FindAllStringSubmatchIndex(src, -1) {
		out = append(out, comparedLiteral{src[m[2]:m[3]], lineOf(m[0])})
	}
	for _, m := range in.FindAllStringSubmatchIndex(src, -1) {
		for _, q := range quoted.FindAllStringSubmatch(src[m[2]:m[3]], -1) {
			out = append(out, comparedLiteral{q[1], lineOf(m[0])})
		}
	}
	return out
}

func TestComparedLiteralsFindsEachForm(t *testing.T) {
	t.Parallel()
	src := "where k.state = 'a' and resolution <> 'b'\n and x.state in ('c', 'd') and review_state = 'no' and state not in ('e')"
	var got []string
	for _, l := range comparedLiterals(src, "state") {
		got = append(got, l.value)
	}
	if want := []string{"a", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("state literals: %v, want %v", got, want)
	}
	if got := comparedLiterals(src, "resolution"); len(got) != 1 || got[0].value != "b" {
		t.Fatalf("resolution literals: %v", got)
	}
}
