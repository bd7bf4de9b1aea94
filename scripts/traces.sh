#!/usr/bin/env bash
# Checks docs/tracing.md against a real tracing backend: Jaeger all-in-one (tools/jaeger), OTLP in,
# its query API out. A live outage dead-letters a few orders published with a producer's
# traceparent, as an instrumented service would; plan, shadow and execute replay them, with
# replayctl and billing-consumer each in its own process and traced by the standard OTEL_*
# variables. Then internal/tracing/jaegercheck reads the traces back: one trace per replayed
# message with the consumer's delivery, claim, calls and completion, linked to the job and to
# the delivery that dead-lettered it; no raw event ID or payload value on any span.
# REPLAY_CONSUMER, when set, is another consumer's command line (taking the Go example's flags),
# which replaces the Go consumer once the outage has dead-lettered the orders, as in
# scripts/tutorial.sh: its spans must hold what the Go consumer's do (the TypeScript SDK's, in
# .ci/run). It runs as service billing-consumer.
# Needs Jaeger's ports free (4317, 4318, 16686). JAEGER_KEEP=1 leaves Jaeger running on exit (to
# look at the traces at http://127.0.0.1:16686).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

work=$(mktemp -d /tmp/replayctl-traces.XXXXXX)
schema="traces_$$"
base_url="${REPLAYCTL_TEST_DATABASE_URL:-${DATABASE_URL:-postgres:///test?host=/var/run/postgresql}}"
pids=()
jaeger_pid=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$jaeger_pid" ] && [ -z "${JAEGER_KEEP:-}" ]; then kill "$jaeger_pid" 2>/dev/null || true; wait "$jaeger_pid" 2>/dev/null || true; fi
  psql -q "$base_url" -c "drop schema if exists $schema cascade" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf 'traces: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; for f in "$work"/*.log; do say "--- $f"; tail -20 "$f" >&2; done; exit 1; }

for port in 4317 4318 16686; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port is taken: Jaeger needs 4317, 4318 and 16686"; fi
done

. scripts/world.sh
find_natscli

say "building replayctl, billing-consumer, Jaeger all-in-one v1.75.0 (tools/jaeger) and the checker"
build_binaries
go build -o "$work/jaegercheck" ./internal/tracing/jaegercheck
go build -C tools/jaeger -o "$work/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger

"$work/jaeger" >"$work/jaeger.log" 2>&1 &
jaeger_pid=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:16686/api/services >/dev/null && break; sleep 0.2; done
curl -sf http://127.0.0.1:16686/api/services >/dev/null || fail "Jaeger did not start"

start_nats
make_schema

# The operator's tracing backend, named as any OpenTelemetry service names it.
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
export OTEL_BSP_SCHEDULE_DELAY=200

n() { "$nats" --server "$NATS_URL" "$@"; }
n stream add BILLING --subjects 'billing.>' --defaults >/dev/null
n stream add DLQ_BILLING --subjects 'dlq.billing.>' --defaults >/dev/null
replayctl migrate >/dev/null

outage_ends=$(( $(date +%s) + 7 ))
billing-consumer -fail-charges-until 6s -retry-backoff 100ms -dlq-subject dlq.billing.charge 2>"$work/consumer.log" &
consumer=$!
pids+=($consumer)
for _ in $(seq 1 50); do grep -q "answering shadow requests" "$work/consumer.log" && break; sleep 0.1; done

orders=5
: >"$work/originals"
for i in $(seq 1 "$orders"); do
  trace_id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  span_id=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  n pub billing.charge.requested -H "Event-Id:evt-tr-$i" -H "traceparent:00-$trace_id-$span_id-01" \
    "{\"orderId\":\"ord-tr-$i\",\"customer\":\"cust-tr-$i\",\"amountCents\":$((1000 + i)),\"currency\":\"EUR\"}" >/dev/null 2>&1
  echo "evt-tr-$i $trace_id" >>"$work/originals"
done
say "published $orders orders with a producer's traceparent during the outage"
for _ in $(seq 1 150); do
  dlq=$(n stream info DLQ_BILLING --json | jq .state.messages)
  [ "$dlq" -ge "$orders" ] && break
  sleep 0.2
done
[ "$dlq" -eq "$orders" ] || fail "DLQ_BILLING holds $dlq messages, want $orders"
while [ "$(date +%s)" -lt "$outage_ends" ]; do sleep 0.2; done
if [ -n "${REPLAY_CONSUMER:-}" ]; then
  kill -INT "$consumer"; wait "$consumer" 2>/dev/null || true
  say "the replay runs against: $REPLAY_CONSUMER"
  OTEL_SERVICE_NAME=billing-consumer $REPLAY_CONSUMER -dlq-subject dlq.billing.charge 2>"$work/consumer-2.log" &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "answering shadow requests" "$work/consumer-2.log" && break; sleep 0.1; done
  grep -q "answering shadow requests" "$work/consumer-2.log" || fail "$REPLAY_CONSUMER did not start: $(tail -5 "$work/consumer-2.log")"
fi

replayctl plan --consumer billing --stream DLQ_BILLING --reason "provider outage fixed; traces check" -o "$work/job.json" >/dev/null
replayctl shadow "$work/job.json" --max-calls-over 1 >/dev/null
replayctl execute "$work/job.json" --yes >/dev/null
job=$(jq -r .jobId "$work/job.json")
[ "$(replayctl --json status "$job" | jq -r .status)" = completed ] || fail "job $job did not complete"
say "job $job replayed $orders orders; reading the traces back from Jaeger"

forbid=$(for i in $(seq 1 "$orders"); do printf 'evt-tr-%s,ord-tr-%s,cust-tr-%s,' "$i" "$i" "$i"; done)
"$work/jaegercheck" -job "$job" -originals "$work/originals" -forbid "${forbid%,}" || fail "the traces do not hold what docs/tracing.md promises"
if [ -n "${JAEGER_KEEP:-}" ]; then say "Jaeger stays up: http://127.0.0.1:16686 (kill $jaeger_pid)"; fi
say "done in $(( $(date +%s) - started ))s"
