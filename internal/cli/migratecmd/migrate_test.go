package migratecmd

import (
	"testing"

	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestMigrateTakesNoArgumentsAndOpensNothingBeforeItsRun(t *testing.T) {
	var got *MigrateOptions
	if err := clitest.Run(NewCmdMigrate(clitest.Factory(t), func(o *MigrateOptions) error { got = o; return nil })); err != nil || got == nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := clitest.Run(NewCmdMigrate(clitest.Factory(t), func(*MigrateOptions) error { return nil }), "0033"); err == nil {
		t.Fatal("migrate took an argument")
	}
}
