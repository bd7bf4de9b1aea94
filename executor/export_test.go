package executor

// SettledRecounts is how many ledger re-counts the in-flight window has run in this process.
func SettledRecounts() int64 { return settledRecounts.Load() }
