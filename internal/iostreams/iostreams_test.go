package iostreams

import (
	"strings"
	"testing"
)

func TestTestStreamsStartWithoutTTY(t *testing.T) {
	ios, stdin, stdout, stderr := Test()
	if ios.IsStdinTTY() || ios.IsStdoutTTY() || ios.IsStderrTTY() {
		t.Fatal("Test streams must not be TTYs until a test says so")
	}
	stdin.WriteString("yes\n")
	buf := make([]byte, 4)
	if n, _ := ios.In.Read(buf); string(buf[:n]) != "yes\n" {
		t.Errorf("In reads %q, want the stdin buffer", buf[:n])
	}
	ios.Out.Write([]byte("data"))
	ios.ErrOut.Write([]byte("log"))
	if stdout.String() != "data" || stderr.String() != "log" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	ios.SetStdinTTY(true)
	ios.SetStdoutTTY(true)
	ios.SetStderrTTY(true)
	if !ios.IsStdinTTY() || !ios.IsStdoutTTY() || !ios.IsStderrTTY() {
		t.Error("Set*TTY(true) did not take")
	}
}

// runProgress reports a step of total units up to done on streams whose stderr is a TTY or not,
// and returns what reached stdout and stderr.
func runProgress(stderrTTY, machineOutput bool, total, done int64) (stdout, stderr string) {
	ios, _, out, errOut := Test()
	ios.SetStderrTTY(stderrTTY)
	ios.SetMachineOutput(machineOutput)
	p := ios.StartProgress("scanning", total)
	p.Set(done)
	p.Finish()
	return out.String(), errOut.String()
}

func TestProgressIsSilentWithoutTTY(t *testing.T) {
	if stdout, stderr := runProgress(false, false, 100, 50); stdout+stderr != "" {
		t.Errorf("progress wrote without a TTY: stdout %q, stderr %q", stdout, stderr)
	}
}

func TestProgressIsSilentForMachineOutput(t *testing.T) {
	if _, stderr := runProgress(true, true, 100, 100); stderr != "" {
		t.Errorf("progress wrote under --json: %q", stderr)
	}
}

func TestProgressDrawsOnTTY(t *testing.T) {
	stdout, stderr := runProgress(true, false, 200, 200)
	for _, want := range []string{"scanning", "100%", "200/200", "it/s"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress output %q lacks %q", stderr, want)
		}
	}
	if !strings.HasSuffix(stderr, "\n") {
		t.Errorf("a finished bar must end its line: %q", stderr)
	}
	if stdout != "" {
		t.Errorf("progress went to stdout: %q", stdout)
	}
}

func TestProgressFinishDoesNotFillAnInterruptedBar(t *testing.T) {
	_, stderr := runProgress(true, false, 1000, 10)
	if strings.Contains(stderr, "100%") || !strings.Contains(stderr, "10/1000") || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("interrupted bar: %q; want it left at 10/1000 and its line ended", stderr)
	}
}

func TestProgressWithUnknownTotal(t *testing.T) {
	if _, stderr := runProgress(true, false, 0, 42); !strings.Contains(stderr, "scanning") {
		t.Errorf("spinner output %q lacks the description", stderr)
	}
}
