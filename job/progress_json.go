package job

import (
	"encoding/json"
	"time"
)

// MarshalJSON gives the ETA in seconds, the one form of a duration in every --json document.
func (p Progress) MarshalJSON() ([]byte, error) {
	type plain Progress
	return json.Marshal(struct {
		plain
		ETASeconds float64 `json:"etaSeconds"`
	}{plain(p), p.ETA.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Progress) UnmarshalJSON(data []byte) error {
	type plain Progress
	v := struct {
		*plain
		ETASeconds float64 `json:"etaSeconds"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.ETA = time.Duration(v.ETASeconds * float64(time.Second))
	return nil
}
