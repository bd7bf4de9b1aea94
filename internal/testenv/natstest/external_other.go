//go:build !linux

package natstest

import "os/exec"

// dieWithParent is Linux-only; elsewhere a server outlives a test binary that dies without its
// cleanup.
func dieWithParent(*exec.Cmd) {}
