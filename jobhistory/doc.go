// Package jobhistory reads what the ledger remembers about replay jobs for an operator: the list
// of jobs with their figures, each job's audit trail, and the sealed manifest stored with it at
// plan time. It only reads, and never prints.
package jobhistory
