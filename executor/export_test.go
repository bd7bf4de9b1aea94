package executor

// SettledRecounts is how many ledger re-counts the in-flight window has run in this process.
func SettledRecounts() int64 { return settledRecounts.Load() }

// TargetCounts is how many times the polls have read a job's target statuses in this process.
func TargetCounts() int64 { return targetCounts.Load() }
