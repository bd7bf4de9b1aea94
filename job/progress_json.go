package job

import (
	"encoding/json"
	"time"
)

// MarshalJSON gives the ETA in seconds, the one form of a duration in every --json document.
func (p Progress) MarshalJSON() ([]byte, error) {
	type plain Progress
	return MarshalWithETA(plain(p), p.ETA)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Progress) UnmarshalJSON(data []byte) error {
	type plain Progress
	eta, err := UnmarshalWithETA(data, (*plain)(p))
	p.ETA = eta
	return err
}

// MarshalWithETA encodes v, a struct whose ETA field is left out of its JSON, with eta in
// seconds as etaSeconds.
func MarshalWithETA(v any, eta time.Duration) ([]byte, error) {
	obj, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	seconds, err := json.Marshal(eta.Seconds())
	if err != nil {
		return nil, err
	}
	sep := ","
	if len(obj) == 2 {
		sep = ""
	}
	out := append(obj[:len(obj)-1:len(obj)-1], sep+`"etaSeconds":`...)
	return append(append(out, seconds...), '}'), nil
}

// UnmarshalWithETA decodes data into v and returns its etaSeconds as a duration.
func UnmarshalWithETA(data []byte, v any) (time.Duration, error) {
	var eta struct {
		Seconds float64 `json:"etaSeconds"`
	}
	if err := json.Unmarshal(data, v); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(data, &eta); err != nil {
		return 0, err
	}
	return time.Duration(eta.Seconds * float64(time.Second)), nil
}
