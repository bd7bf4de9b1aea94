package ledger

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrUnavailable means the ledger database could not be reached or refused the connection
	// (wrong host, PostgreSQL down, bad credentials, unknown database).
	ErrUnavailable = errors.New("ledger database unavailable")

	// ErrInvalidURL means the ledger database URL does not parse: retrying it unchanged cannot
	// succeed, unlike ErrUnavailable.
	ErrInvalidURL = fault.New(fault.Invalid, "invalid ledger database URL")

	// ErrSchemaOutdated means the ledger schema is not the version this binary needs: older (run
	// `replayctl migrate`) or newer (upgrade replayctl).
	ErrSchemaOutdated = errors.New("ledger schema outdated")

	// ErrJobNotFound means the ledger holds no job with the given ID.
	ErrJobNotFound = fault.New(fault.Invalid, "job not found")

	// ErrConflict means a write collided with a row already in the ledger (a unique key).
	ErrConflict = errors.New("conflicts with a row already in the ledger")
)

// pgUniqueViolation is SQLSTATE unique_violation.
const pgUniqueViolation = "23505"

// translate turns PostgreSQL errors that callers act on into ledger sentinels, keeping the
// original in the chain for logs and errors.As.
func translate(err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == pgUniqueViolation {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// Refused reports whether err is PostgreSQL's answer refusing a statement (a constraint
// violation, an undefined column), and its SQLSTATE: the statement reached the server, which
// running it again does not change. A lost connection is not a refusal (ConnectionLost), even
// when the server said so with a SQLSTATE of its own.
func Refused(err error) (sqlState string, ok bool) {
	if ConnectionLost(err) {
		return "", false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Code, true
	}
	return "", false
}

// schemaMismatchError carries both versions, so the message can say which way to go while
// errors.Is still matches the one sentinel commands map to an exit code.
type schemaMismatchError struct {
	current, wanted int
	missing         []string
}

func (e *schemaMismatchError) Error() string {
	if len(e.missing) > 0 {
		return fmt.Sprintf("ledger schema is at version %d but lacks migrations %s: run `replayctl migrate`", e.current, strings.Join(e.missing, ", "))
	}
	if e.current > e.wanted {
		return fmt.Sprintf("ledger schema is at version %d, newer than this replayctl knows (%d): upgrade replayctl", e.current, e.wanted)
	}
	return fmt.Sprintf("ledger schema is at version %d, this replayctl needs %d: run `replayctl migrate`", e.current, e.wanted)
}

func (e *schemaMismatchError) Is(target error) bool { return target == ErrSchemaOutdated }
