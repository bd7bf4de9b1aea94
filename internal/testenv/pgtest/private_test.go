package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPrivateServerStopsAndStartsWithItsData(t *testing.T) {
	p := StartPrivate(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "create table kept (v int); insert into kept values (42)"); err != nil {
		t.Fatal(err)
	}
	p.Stop(t)
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a session lived through pg_ctl -m immediate stop")
	}
	if _, err := pgx.Connect(ctx, p.URL()); err == nil {
		t.Fatal("the stopped server accepted a connection")
	}
	start := time.Now()
	p.Start(t)
	t.Logf("started again in %s", time.Since(start).Round(time.Millisecond))
	again, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(context.Background())
	var v int
	if err := again.QueryRow(ctx, "select v from kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after the restart: %d, %v; want the committed row 42", v, err)
	}
}
