# Sourced by scripts/tutorial.sh and scripts/traces.sh: the world both run in, beside the
# machine's services and never touching them. The caller sets work (its temporary directory),
# schema, base_url and the array pids, and defines say.
#   find_natscli      sets nats: $NATS_CLI, else `nats` on PATH, else /tmp/bin/nats, else it
#                     installs natscli v0.5.0 from the Go module proxy into $work/bin
#   build_binaries    builds replayctl and billing-consumer into $work, first on PATH
#   start_nats        starts a nats-server ($NATS_SERVER, else the machine's) on a spare port with
#                     its own store, exports NATS_URL and waits until it answers
#   make_schema       creates $schema in $base_url and exports REPLAYCTL_DATABASE_URL to it

find_natscli() {
  nats="${NATS_CLI:-$(command -v nats || true)}"
  [ -n "$nats" ] || { [ -x /tmp/bin/nats ] && nats=/tmp/bin/nats; } || true
  if [ -z "$nats" ]; then
    say "installing natscli v0.5.0 from the Go module proxy"
    GOBIN="$work/bin" go install github.com/nats-io/natscli/nats@v0.5.0
    nats="$work/bin/nats"
  fi
}

build_binaries() {
  go build -o "$work/replayctl" . && go build -o "$work/billing-consumer" ./examples/billing/cmd/billing-consumer
  export PATH="$work:$PATH"
}

start_nats() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${NATS_SERVER:-/usr/sbin/nats-server}" -a 127.0.0.1 -p "$port" -js -sd "$work/js" >"$work/nats-server.log" 2>&1 &
  pids+=($!)
  export NATS_URL="nats://127.0.0.1:$port"
  for _ in $(seq 1 50); do "$nats" --server "$NATS_URL" server check connection >/dev/null 2>&1 && break; sleep 0.1; done
}

make_schema() {
  psql -q "$base_url" -c "create schema $schema" >/dev/null
  case "$base_url" in *\?*) REPLAYCTL_DATABASE_URL="$base_url&search_path=$schema" ;; *) REPLAYCTL_DATABASE_URL="$base_url?search_path=$schema" ;; esac
  export REPLAYCTL_DATABASE_URL
}
