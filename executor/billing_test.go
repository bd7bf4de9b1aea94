package executor_test

import (
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

func billingHandler(e *exectest.Env) consumer.Handler { return billing.Handler(e.Provider, time.Now) }
