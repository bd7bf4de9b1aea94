// Package pgserver runs PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) for a
// server of one's own on this machine: the fault tests' private servers (internal/testenv/pgtest)
// and the fault soak's primary and replica (cmd/soak).
package pgserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// BinGlob is where Debian's postgresql packages put the server binaries, one directory per major
// version.
const BinGlob = "/usr/lib/postgresql/*/bin"

// runTimeout bounds one binary's run; pipeGrace how long its output pipe may stay open after it
// exited (a server pg_ctl started holds it).
const (
	runTimeout = 2 * time.Minute
	pipeGrace  = 10 * time.Second
)

// Binaries is the directory holding every binary in need, the newest major version's first;
// override, when set, is the only directory looked at. "" when none has them all.
func Binaries(override string, need ...string) string {
	dirs, _ := filepath.Glob(BinGlob)
	slices.SortFunc(dirs, func(a, b string) int { return majorVersion(b) - majorVersion(a) })
	if override != "" {
		dirs = []string{override}
	}
	for _, d := range dirs {
		if !slices.ContainsFunc(need, func(name string) bool { return !isFile(filepath.Join(d, name)) }) {
			return d
		}
	}
	return ""
}

// majorVersion reads 15 from /usr/lib/postgresql/15/bin.
func majorVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// Owner is who runs the server binaries: nil (this process's user) unless this process is root,
// whom initdb and postgres refuse; then the postgres user.
func Owner() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root: no postgres user to run the server as (%w)", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Run runs the binary name of bin in dir as owner (nil: this process's user) and returns its
// combined output. A run past two minutes is killed.
func Run(bin, dir string, owner *syscall.Credential, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	if owner != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: owner}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = pipeGrace
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish in %s", name, runTimeout)
	}
	return out.Bytes(), err
}
