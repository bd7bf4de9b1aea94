package apikey

// RetryAnswer is what a caller's next retry of a record gets (with the same request body; a
// changed body is always 422): what `replayctl keys show` tells the person deciding.
type RetryAnswer struct {
	// Answer is runs, replayed, in_progress, uncertain, already_done or looked_up.
	Answer string `json:"answer"`
	// Status is the HTTP status the retry is answered with; 0 when it depends on the handler
	// (runs) or on the look-up (looked_up).
	Status int `json:"responseStatus,omitempty"`
	// Detail says why, in a sentence.
	Detail string `json:"detail"`
}

// NextRetry says what the middleware answers the next retry of r with the same body, as its
// claim and answerExisting decide (package idempotency); the two are held together by a test.
func (r Record) NextRetry() RetryAnswer {
	switch {
	case r.State == StateProcessing && r.LeaseLive:
		return RetryAnswer{"in_progress", 409, "a request with this key is running; the retry is told to come back when it finishes"}
	case r.State == StateProcessing && r.CallsStarted > 0:
		return RetryAnswer{"uncertain", 503, "its lease lapsed after an external call started: the retry marks it uncertain and is never run"}
	case r.State == StateProcessing, r.State == StateReceived:
		return RetryAnswer{"runs", 0, "no external call took effect: the retry runs the request"}
	case r.State == StateUncertain:
		return RetryAnswer{"uncertain", 503, "nobody knows whether the call happened: 503 until the reconcile worker or `replayctl keys resolve` settles it"}
	case r.State == StateReconciled && r.Resolution == ResolutionNotHappened:
		return RetryAnswer{"runs", 0, "settled as not happened: the retry runs the request, under the same operation ID"}
	case r.State == StateReconciled:
		return RetryAnswer{"already_done", 410, "settled as happened: the retry is told so, with the provider's reference, and never run"}
	case r.State == StateCompleted && r.ReplayOpen && r.ResponseSealed != nil:
		return RetryAnswer{"replayed", r.ResponseStatus, "the stored response is replayed"}
	case r.State == StateCompleted && r.ReplayOpen:
		return RetryAnswer{"in_progress", 409, "completed without a stored response inside its replay window: the retry is told to retry shortly"}
	}
	return RetryAnswer{"looked_up", 0, "its replay window closed: the route runs it as new if it declared so, else asks its look-up " +
		"(410 if it happened, runs if not, 503 and review if the look-up cannot tell)"}
}
