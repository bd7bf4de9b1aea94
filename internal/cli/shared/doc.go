// Package shared holds what more than one verb package renders or takes (gh's pkg/cmd/pr/shared):
// the manifest summary plan and show print, execute's progress and result that status and demo
// print too, the shadow report, plan's options and runner that inspect reuses. Verb packages
// import it, never each other (a test in internal/cli keeps it so).
package shared
