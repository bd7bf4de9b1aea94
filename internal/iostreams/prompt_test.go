package iostreams

import "testing"

func TestConfirmTypedAcceptsOnlyTheNameTyped(t *testing.T) {
	for _, c := range []struct {
		typed string
		want  bool
	}{
		{"job-1\n", true},
		{"  job-1  \n", true},
		{"job-1", true}, // the line ends with In
		{"job-2\n", false},
		{"y\n", false},
		{"", false},
	} {
		ios, stdin, _, stderr := Test()
		stdin.WriteString(c.typed)
		if got := ios.ConfirmTyped("the job ID", "job-1"); got != c.want {
			t.Errorf("ConfirmTyped after %q = %t, want %t", c.typed, got, c.want)
		}
		if got := stderr.String(); got != "Type the job ID to confirm: " {
			t.Errorf("prompt = %q", got)
		}
	}
}

func TestCanPromptNeedsStdinAndStderrTerminals(t *testing.T) {
	ios, _, _, _ := Test()
	ios.SetStdinTTY(true)
	if ios.CanPrompt() {
		t.Error("CanPrompt with only stdin a terminal")
	}
	ios.SetStderrTTY(true)
	if !ios.CanPrompt() {
		t.Error("CanPrompt is false with stdin and stderr terminals")
	}
}
