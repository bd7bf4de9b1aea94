package consumer

// Lengths stored for error text: Dlq-Reason is a plan's histogram key, last_error a note for
// whoever reviews the row.
const (
	maxReasonBytes    = 200
	maxLastErrorBytes = 1000
)
