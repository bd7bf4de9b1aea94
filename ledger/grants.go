package ledger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/fault"
)

// Roles names the PostgreSQL roles of a least-privilege ledger (docs/operations.md). The schema's
// owner runs `replayctl migrate`; none of these roles can change the schema.
type Roles struct {
	// SDK is the consumer SDK's role: it claims, marks and settles effect rows and reads the job
	// and version rows it checks a replay against, but cannot plan, change or delete a job.
	SDK string
	// Operator is replayctl's role for plan, shadow, execute, the job controls, reconcile and prune.
	Operator string
	// ReadOnly is for status, show, jobs, log and ledger stats: dashboards and CI.
	ReadOnly string
}

// sdkTablePrivileges is what the consumer SDK's statements need, table by table. A table missing
// here is one the SDK cannot touch; the test that runs the SDK under this role (internal/cli's
// roles_test.go) fails when a new SDK statement needs more.
var sdkTablePrivileges = map[string][]string{
	"effects":                {"select", "insert", "update"},
	"effect_bodies":          {"select", "insert"},
	"effect_tombstones":      {"select"},
	"effect_versions":        {"select"},
	"jobs":                   {"select"},
	"job_targets":            {"select"},
	"effect_incidents":       {"select", "insert"},
	"delivery_counts":        {"select", "insert", "update"},
	"fingerprint_algorithms": {"select", "insert", "update"},
	"audit":                  {"insert"},
	"replayctl_migrations":   {"select"},
	// The HTTP middleware (package idempotency) runs under the same role as the SDK.
	"api_keys":           {"select", "insert", "update"},
	"api_key_tombstones": {"select"},
	"api_key_daily":      {"select", "insert", "update"},
	"retention_policies": {"select", "insert", "update"},
}

// operatorPrivileges is replayctl's: it writes every ledger table (prune deletes effect rows and
// jobs) but owns none, so it cannot drop or alter them.
const operatorPrivileges = "select, insert, update, delete"

// ErrPermissionDenied means the database role replayctl or the SDK connected as lacks a privilege
// the statement needs: a deployment's grants, not the ledger's rows, are wrong.
var ErrPermissionDenied = fault.New(fault.Invalid, "the database role lacks a privilege")

// pgInsufficientPrivilege is SQLSTATE insufficient_privilege.
const pgInsufficientPrivilege = "42501"

// ClassifyPermission returns err marked with ErrPermissionDenied when PostgreSQL refused a
// statement for the role's privileges, and err unchanged otherwise. It is applied once, where
// commands map errors to exit codes, so every query is covered without wrapping each.
func ClassifyPermission(err error) error {
	if err == nil || errors.Is(err, ErrPermissionDenied) {
		return err
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == pgInsufficientPrivilege {
		return fmt.Errorf("%w: %w", ErrPermissionDenied, err)
	}
	return err
}

// GrantStatements returns the SQL that gives roles their privileges on the ledger in schema, for
// the schema owner to review and run (replayctl's own roles cannot grant). An empty role name is
// skipped. Run it again after `replayctl migrate` adds a table: ALL TABLES covers only those that
// exist, and the SDK's list is explicit.
func GrantStatements(schema string, r Roles) ([]string, error) {
	if schema == "" {
		return nil, errors.New("grants need the ledger's schema name (the first schema of its search_path, usually public)")
	}
	if r.SDK == "" && r.Operator == "" && r.ReadOnly == "" {
		return nil, errors.New("grants need at least one role: --sdk-role, --operator-role or --readonly-role")
	}
	s := pgx.Identifier{schema}.Sanitize()
	var out []string
	if r.Operator != "" {
		role := pgx.Identifier{r.Operator}.Sanitize()
		out = append(out,
			fmt.Sprintf("grant usage on schema %s to %s;", s, role),
			fmt.Sprintf("grant %s on all tables in schema %s to %s;", operatorPrivileges, s, role),
			fmt.Sprintf("grant usage, select on all sequences in schema %s to %s;", s, role),
		)
	}
	if r.SDK != "" {
		role := pgx.Identifier{r.SDK}.Sanitize()
		out = append(out, fmt.Sprintf("grant usage on schema %s to %s;", s, role))
		tables := make([]string, 0, len(sdkTablePrivileges))
		for t := range sdkTablePrivileges {
			tables = append(tables, t)
		}
		sort.Strings(tables)
		for _, t := range tables {
			out = append(out, fmt.Sprintf("grant %s on %s.%s to %s;",
				strings.Join(sdkTablePrivileges[t], ", "), s, pgx.Identifier{t}.Sanitize(), role))
		}
		out = append(out, fmt.Sprintf("grant usage on all sequences in schema %s to %s;", s, role))
	}
	if r.ReadOnly != "" {
		role := pgx.Identifier{r.ReadOnly}.Sanitize()
		out = append(out,
			fmt.Sprintf("grant usage on schema %s to %s;", s, role),
			fmt.Sprintf("grant select on all tables in schema %s to %s;", s, role),
		)
	}
	return out, nil
}

// CurrentSchema returns the schema the ledger's tables are in: the first of the connection's
// search_path that exists.
func (s *Store) CurrentSchema(ctx context.Context) (string, error) {
	var schema *string
	if err := s.pool.QueryRow(ctx, `select current_schema()`).Scan(&schema); err != nil {
		return "", fmt.Errorf("read the ledger's schema: %w", err)
	}
	if schema == nil {
		return "", errors.New("the connection's search_path names no existing schema: set --schema")
	}
	return *schema, nil
}
