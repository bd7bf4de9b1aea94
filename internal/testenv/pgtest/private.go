package pgtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/replayctl/replayctl/internal/pgserver"
)

// Private is a PostgreSQL server of one test's own: initdb into a temporary directory, trust
// authentication, a free loopback port and its unix socket in the same directory. A test may stop
// and start it, which a server shared with other tests must never be; it is stopped and removed at
// cleanup.
type Private struct {
	bin, dir, data string
	port           int
	// cred runs the server binaries as the postgres user when the test runs as root: initdb and
	// postgres refuse to run as root.
	cred *syscall.Credential
}

// StartPrivate initialises and starts a private server for t. It skips t, saying what is missing,
// when no PostgreSQL server binaries are installed, or when the test runs as root and there is no
// postgres user to run them as.
func StartPrivate(t testing.TB) *Private {
	t.Helper()
	// REPLAYCTL_TEST_PG_BIN names another directory of binaries than Debian's.
	bin := pgserver.Binaries(os.Getenv("REPLAYCTL_TEST_PG_BIN"), "initdb", "pg_ctl")
	if bin == "" {
		t.Skipf("pgtest: no PostgreSQL server binaries (initdb, pg_ctl) in %s or REPLAYCTL_TEST_PG_BIN: install postgresql to run this test", pgserver.BinGlob)
	}
	p := &Private{bin: bin}
	var err error
	if p.cred, err = pgserver.Owner(); err != nil {
		t.Skipf("pgtest: %v", err)
	}
	// Not t.TempDir: its parents are private to this user, and the server may run as another.
	dir, err := os.MkdirTemp("", "replayctl-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p.dir, p.data = dir, filepath.Join(dir, "data")
	if p.cred != nil {
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatalf("pgtest: give %s to the postgres user: %v", dir, err)
		}
	}
	if p.port, err = freePort(); err != nil {
		t.Fatalf("pgtest: pick a port: %v", err)
	}
	if out, err := p.run("initdb", "-D", p.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	t.Cleanup(func() { p.run("pg_ctl", "-D", p.data, "-m", "immediate", "stop") })
	p.Start(t)
	return p
}

// URL reaches the private server's database postgres as the superuser postgres, over TCP, so a
// stopped server refuses connections as a crashed or restarting one does.
func (p *Private) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Start starts the stopped server and returns once it accepts connections.
func (p *Private) Start(t testing.TB) {
	t.Helper()
	// fsync off: the machine does not crash in these tests, only the server is stopped.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", p.port, p.dir)
	if out, err := p.run("pg_ctl", "-D", p.data, "-l", filepath.Join(p.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		t.Fatalf("pgtest: start the private server on port %d: %v\n%s\n%s", p.port, err, out, p.log())
	}
}

// Stop stops the server the way a crash or a failover does: pg_ctl -m immediate, which ends every
// session at once without a checkpoint, so the next start runs crash recovery.
func (p *Private) Stop(t testing.TB) {
	t.Helper()
	if out, err := p.run("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop"); err != nil {
		t.Fatalf("pgtest: stop the private server: %v\n%s", err, out)
	}
}

// log is the server's log, for a failure message.
func (p *Private) log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
	return string(b)
}

// run runs one of the server binaries, as the postgres user when the test is root.
func (p *Private) run(name string, args ...string) ([]byte, error) {
	return pgserver.Run(p.bin, p.dir, p.cred, name, args...)
}

// freePort asks the kernel for a loopback port nobody uses right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
