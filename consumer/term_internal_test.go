package consumer

import "testing"

func TestTermReasonReadFromNATSServer2104(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]bool{
		"2.9.10": false, "2.9.25": false, "2.10.3": false, "": false, "garbage": false, "2.10": false,
		"2.10.4": true, "2.10.29": true, "2.11.0": true, "v2.12.1": true, "2.15.2": true, "3.0.0": true,
		"2.11.0-RC.1": true, "2.10.3-beta": false,
	} {
		if got := termReasonRead(version); got != want {
			t.Errorf("termReasonRead(%q) = %v, want %v", version, got, want)
		}
	}
}
