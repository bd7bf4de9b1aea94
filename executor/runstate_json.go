package executor

import (
	"encoding/json"
	"time"
)

// MarshalJSON gives the ETA in seconds, the one form of a duration in every --json document.
func (s RunState) MarshalJSON() ([]byte, error) {
	type plain RunState
	return json.Marshal(struct {
		plain
		ETASeconds float64 `json:"etaSeconds"`
	}{plain(s), s.ETA.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *RunState) UnmarshalJSON(data []byte) error {
	type plain RunState
	v := struct {
		*plain
		ETASeconds float64 `json:"etaSeconds"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	s.ETA = time.Duration(v.ETASeconds * float64(time.Second))
	return nil
}
