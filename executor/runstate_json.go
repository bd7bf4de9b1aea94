package executor

import "github.com/replayctl/replayctl/job"

// MarshalJSON gives the ETA in seconds, the one form of a duration in every --json document.
func (s RunState) MarshalJSON() ([]byte, error) {
	type plain RunState
	return job.MarshalWithETA(plain(s), s.ETA)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *RunState) UnmarshalJSON(data []byte) error {
	type plain RunState
	eta, err := job.UnmarshalWithETA(data, (*plain)(s))
	s.ETA = eta
	return err
}
