package natstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ExternalServerEnv names the variable that makes Start run a nats-server binary instead of the
// embedded server, so the tests that only talk to the server over a connection also run against
// the version an operator has installed (.ci/run sets it to /usr/sbin/nats-server for the
// consumer's message-handling tests).
const ExternalServerEnv = "REPLAYCTL_TEST_NATS_SERVER"

// startExternal runs binary for t with JetStream, a fresh store and a random loopback port,
// killed at cleanup, and connects to it. The port comes from the ports file the server writes
// once it listens, so two tests never race for a port.
func startExternal(t testing.TB, binary string) *Env {
	t.Helper()
	dir := t.TempDir()
	store, portsDir := filepath.Join(dir, "store"), filepath.Join(dir, "ports")
	if err := os.Mkdir(portsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(binary, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store, "--ports_file_dir", portsDir)
	cmd.Stdout, cmd.Stderr = &log, &log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("natstest: start %s=%s: %v", ExternalServerEnv, binary, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url, err := waitForPortsFile(portsDir, exited, 10*time.Second)
	if err != nil {
		t.Fatalf("natstest: %s=%s: %v; its output:\n%s", ExternalServerEnv, binary, err, log.String())
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("natstest: connect to %s at %s: %v", binary, url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Conn: nc, JS: js, URL: url}
}

// waitForPortsFile returns the client URL the server in dir reports, once it does.
func waitForPortsFile(dir string, exited <-chan struct{}, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if url, ok := readPortsFile(dir); ok {
			return url, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("the server exited before listening")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no ports file in %s after %s", dir, timeout)
		}
	}
}

func readPortsFile(dir string) (string, bool) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.ports"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var ports struct {
			Nats []string `json:"nats"`
		}
		if json.Unmarshal(data, &ports) == nil && len(ports.Nats) > 0 {
			return ports.Nats[0], true
		}
	}
	return "", false
}
