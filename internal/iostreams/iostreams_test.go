package iostreams

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
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
	p := ios.StartProgress("scanning", total, "events")
	p.Set(done)
	p.Finish()
	return out.String(), errOut.String()
}

func TestProgressIsSilentWithoutTTYOrInterval(t *testing.T) {
	if stdout, stderr := runProgress(false, false, 100, 50); stdout+stderr != "" {
		t.Errorf("progress wrote without a TTY or an interval: stdout %q, stderr %q", stdout, stderr)
	}
}

func TestProgressDrawsNoBarForMachineOutput(t *testing.T) {
	if _, stderr := runProgress(true, true, 100, 100); stderr != "" {
		t.Errorf("progress wrote under --json without an interval: %q", stderr)
	}
}

func TestProgressDrawsOnTTY(t *testing.T) {
	stdout, stderr := runProgress(true, false, 200, 200)
	for _, want := range []string{"scanning", "100%", "200/200 events", "\r"} {
		if !strings.Contains(stderr, strings.ReplaceAll(want, "\\r", "\r")) {
			t.Errorf("progress output %q lacks %q", stderr, want)
		}
	}
	if strings.Contains(stderr, "it/s") {
		t.Errorf("the bar counts events, not iterations: %q", stderr)
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
	if _, stderr := runProgress(true, false, 0, 42); !strings.Contains(stderr, "scanning") || !strings.Contains(stderr, "42 events") {
		t.Errorf("output %q lacks the description and the count", stderr)
	}
}

func TestProgressShowsTheGivenRateAndETAUntilPaused(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetStderrTTY(true)
	p := ios.StartProgress("execute: publishing", 1000, "targets")
	p.SetRate(50)
	p.Set(500)
	p.Describe("execute: publishing")
	if got := lastDraw(errOut.String()); !strings.Contains(got, "500/1000 targets (50%), 50.0/s, ETA 10s") {
		t.Errorf("running bar %q: want the count, the given rate and its ETA", got)
	}
	p.SetPaused(true)
	got := lastDraw(errOut.String())
	if strings.Contains(got, "ETA 1") || strings.Contains(got, "/s,") || !strings.Contains(got, "paused, no ETA") {
		t.Errorf("paused bar %q: want no rate and no ETA", got)
	}
	p.SetPaused(false)
	if got := lastDraw(errOut.String()); !strings.Contains(got, "ETA 10s") {
		t.Errorf("resumed bar %q: want the ETA back", got)
	}
	p.Finish()
}

// lastDraw is the last redraw of a bar, from its last carriage return.
func lastDraw(s string) string { return s[strings.LastIndex(s, "\r")+1:] }

func TestProgressPrintsALinePerIntervalWithoutTTY(t *testing.T) {
	ios, _, out, errOut := Test()
	ios.SetProgressInterval(20 * time.Millisecond)
	p := ios.StartProgress("scanning DLQ", 1000, "events")
	p.Set(250)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(syncString(errOut, p), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.Finish()
	got := errOut.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("want at least two interval lines and a last one, got %q", got)
	}
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ scanning DLQ: 250/1000 events \(25%\)`)
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("line %q: want a timestamp, the label and the count", l)
		}
		if strings.ContainsAny(l, "\r\x1b") {
			t.Errorf("line %q redraws: a log must hold plain lines", l)
		}
	}
	if !strings.Contains(lines[len(lines)-1], "stopped after") {
		t.Errorf("last line %q: want it to say the step ended", lines[len(lines)-1])
	}
	if out.String() != "" {
		t.Errorf("progress went to stdout: %q", out)
	}
	// Finish stopped the ticker: nothing more is printed.
	n := len(errOut.String())
	time.Sleep(60 * time.Millisecond)
	if len(errOut.String()) != n {
		t.Errorf("lines printed after Finish: %q", errOut.String()[n:])
	}
}

func TestProgressLinesShowNoETAWhilePaused(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetProgressInterval(10 * time.Millisecond)
	p := ios.StartProgress("execute: paused", 100, "targets")
	p.SetRate(5)
	p.SetPaused(true)
	p.Set(40)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(syncString(errOut, p), "\n") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.Finish()
	if got := errOut.String(); !strings.Contains(got, "40/100 targets (40%), paused, no ETA") || strings.Contains(got, "ETA 1") {
		t.Errorf("paused lines %q: want the count and no ETA", got)
	}
}

func TestProgressQuietForAShortStep(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetProgressInterval(time.Hour)
	p := ios.StartProgress("scanning", 10, "events")
	p.Set(10)
	p.Finish()
	if errOut.String() != "" {
		t.Errorf("a step shorter than the interval printed %q; its result says enough", errOut)
	}
}

// syncString reads buf under p's lock, since p's ticker writes to it.
func syncString(buf *bytes.Buffer, p Progress) string {
	lp := p.(*lineProgress)
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return buf.String()
}
