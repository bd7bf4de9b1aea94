package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/replayctl/replayctl/internal/pgserver"
)

// pgPair is a private PostgreSQL primary with one streaming replica on this machine, for the
// failover fault: the primary is stopped at once and the replica promoted while execute runs,
// the clients on a multi-host URL with target_session_attrs=read-write.
type pgPair struct {
	bin, dir         string
	cred             *syscall.Credential
	sync             bool
	primary, replica *pgNode
}

// pgNode is one server of the pair.
type pgNode struct {
	name, data string
	port       int
}

// newPGPair starts a primary and its replica under dir; sync makes the replica synchronous
// (synchronous_standby_names and synchronous_commit = on), else it streams asynchronously.
func newPGPair(dir string, sync bool) (*pgPair, error) {
	p := &pgPair{dir: dir, sync: sync, bin: pgserver.Binaries("", "initdb", "pg_ctl", "pg_basebackup")}
	if p.bin == "" {
		return nil, fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) in %s", pgserver.BinGlob)
	}
	var err error
	if p.cred, err = pgserver.Owner(); err != nil {
		return nil, err
	}
	if p.cred != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, err
		}
	}
	p.primary = &pgNode{name: "primary", data: filepath.Join(dir, "primary")}
	p.replica = &pgNode{name: "replica1", data: filepath.Join(dir, "replica1")}
	for _, n := range []*pgNode{p.primary, p.replica} {
		if n.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if out, err := p.run("initdb", "-D", p.primary.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	standbys := ""
	if sync {
		standbys = "replica1"
	}
	if err := p.start(p.primary, "-c wal_level=replica -c max_wal_senders=5 -c synchronous_commit=on -c synchronous_standby_names='"+standbys+"'"); err != nil {
		return nil, err
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=replica1", p.primary.port)
	if out, err := p.run("pg_basebackup", "-d", conninfo, "-D", p.replica.data, "-R", "-X", "stream", "--no-sync"); err != nil {
		return nil, fmt.Errorf("pg_basebackup: %v\n%s", err, out)
	}
	if err := p.start(p.replica, "-c hot_standby=on"); err != nil {
		return nil, err
	}
	return p, nil
}

// url reaches whichever of the two is the primary.
func (p *pgPair) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.primary.port, p.replica.port)
}

func (p *pgPair) start(n *pgNode, extra string) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300 %s", n.port, p.dir, extra)
	if out, err := p.run("pg_ctl", "-D", n.data, "-l", filepath.Join(p.dir, n.name+".log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("start %s on port %d: %v\n%s", n.name, n.port, err, out)
	}
	return nil
}

// failover stops the primary at once (no shutdown checkpoint, as a crash) and promotes the
// replica; the clients' multi-host URL then reaches it.
func (p *pgPair) failover() error {
	if p.replica == nil {
		return fmt.Errorf("no replica left to promote")
	}
	if out, err := p.run("pg_ctl", "-D", p.primary.data, "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("stop the primary: %v\n%s", err, out)
	}
	if out, err := p.run("pg_ctl", "-D", p.replica.data, "-w", "promote"); err != nil {
		return fmt.Errorf("promote the replica: %v\n%s", err, out)
	}
	p.primary, p.replica = p.replica, nil
	return nil
}

// restart stops the primary at once (as a crash) and starts it again on its port: crash
// recovery under a running execute, without a failover.
func (p *pgPair) restart() error {
	// -l again: restart does not keep the log file of the start, and a server writing to our pipe
	// would keep it open for ever.
	if out, err := p.run("pg_ctl", "-D", p.primary.data, "-l", filepath.Join(p.dir, p.primary.name+".log"), "-m", "immediate", "-w", "-t", "60", "restart"); err != nil {
		return fmt.Errorf("restart the primary: %v\n%s", err, out)
	}
	return nil
}

func (p *pgPair) stop() {
	for _, n := range []*pgNode{p.primary, p.replica} {
		if n != nil {
			p.run("pg_ctl", "-D", n.data, "-m", "immediate", "-w", "stop")
		}
	}
	os.RemoveAll(p.dir)
}

func (p *pgPair) run(name string, args ...string) ([]byte, error) {
	return pgserver.Run(p.bin, p.dir, p.cred, name, args...)
}
