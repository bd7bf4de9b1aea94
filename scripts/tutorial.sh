#!/usr/bin/env bash
# Runs docs/tutorial.md end to end, as a new on-call engineer would, and checks what it promises:
# a live outage dead-letters real charges, plan/shadow/execute replay each exactly once.
# It starts its own nats-server (the machine's /usr/sbin/nats-server, or $NATS_SERVER) on a spare
# port, works in its own PostgreSQL schema, and removes both at the end, whatever happens.
# natscli: $NATS_CLI, else `nats` on PATH, else /tmp/bin/nats, else it is installed from the Go
# module proxy (v0.5.0) into the run's temporary directory.
# REPLAY_CONSUMER, when set, is another consumer's command line (taking the Go example's flags)
# that replaces the Go billing consumer once the outage has filled the DLQ: shadow, execute and
# reconcile then run against it, e.g. REPLAY_CONSUMER="node $PWD/sdk/typescript/dist/examples/billing/main.js".
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

work=$(mktemp -d /tmp/replayctl-tutorial.XXXXXX)
schema="tutorial_$$"
base_url="${REPLAYCTL_TEST_DATABASE_URL:-${DATABASE_URL:-postgres:///test?host=/var/run/postgresql}}"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  psql -q "$base_url" -c "drop schema if exists $schema cascade" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf 'tutorial: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

. scripts/world.sh
find_natscli
say "building replayctl and billing-consumer"
build_binaries
start_nats
make_schema
export USER="${USER:-tutorial}"

# --- the tutorial's commands, in its order -------------------------------------------------
n() { "$nats" --server "$NATS_URL" "$@"; }
n stream add BILLING --subjects 'billing.>' --defaults >/dev/null
n stream add DLQ_BILLING --subjects 'dlq.billing.>' --defaults >/dev/null
replayctl migrate

outage_ends=$(( $(date +%s) + 9 ))
billing-consumer -fail-charges-until 8s -retry-backoff 100ms -dlq-subject dlq.billing.charge 2>"$work/consumer-1.log" &
pids+=($!)
consumer=$!
for _ in $(seq 1 50); do grep -q "answering shadow requests" "$work/consumer-1.log" && break; sleep 0.1; done

orders=20
for i in $(seq 1 "$orders"); do
  n pub billing.charge.requested -H "Event-Id:evt-$i" \
    "{\"orderId\":\"ord-$i\",\"customer\":\"cust-$i\",\"amountCents\":$((1000 + i)),\"currency\":\"EUR\"}" >/dev/null 2>&1
done
say "published $orders orders during the outage; waiting for the DLQ to fill"
for _ in $(seq 1 150); do
  dlq=$(n stream info DLQ_BILLING --json | jq .state.messages)
  [ "$dlq" -ge "$orders" ] && break
  sleep 0.2
done
[ "$dlq" -eq "$orders" ] || fail "DLQ_BILLING holds $dlq messages, want $orders"
n stream get DLQ_BILLING 1

# The outage ends 8 s after the consumer started; the DLQ stays until it is replayed.
while [ "$(date +%s)" -lt "$outage_ends" ]; do sleep 0.2; done
if [ -n "${REPLAY_CONSUMER:-}" ]; then
  kill -INT "$consumer"; wait "$consumer" 2>/dev/null || true
  say "the replay runs against: $REPLAY_CONSUMER"
  $REPLAY_CONSUMER -dlq-subject dlq.billing.charge 2>"$work/consumer-2.log" &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "answering shadow requests" "$work/consumer-2.log" && break; sleep 0.1; done
  grep -q "answering shadow requests" "$work/consumer-2.log" || fail "$REPLAY_CONSUMER did not start: $(tail -5 "$work/consumer-2.log")"
fi

# Triage: what is in the DLQ, a selection tried as a dry run (nothing recorded), and a policy
# that asks a second operator to approve what the replay charges.
replayctl inspect --consumer billing --stream DLQ_BILLING
replayctl inspect --json --consumer billing --stream DLQ_BILLING >"$work/inspect.json"
group=$(jq -r '.failureGroups[0].group' "$work/inspect.json")
replayctl plan --dry-run --consumer billing --stream DLQ_BILLING --failure-group "$group" \
  --where 'payload.amountCents > 1010' --reason "payment provider outage fixed; re-run the charges it refused"
[ "$(replayctl jobs --jq '.items | length')" -eq 0 ] || fail "the dry run recorded a job"
# Approvers proven by SSH keys: one for the planner, one for the second operator.
ssh-keygen -q -t ed25519 -N '' -C planner -f "$work/planner_key"
ssh-keygen -q -t ed25519 -N '' -C second-operator -f "$work/second_key"
{
  echo "planner@example.com $(cat "$work/planner_key.pub")"
  echo "second-operator@example.com $(cat "$work/second_key.pub")"
} >"$work/allowed_signers"
replayctl policy set --consumer billing --approvals 1 --allowed-signers "$work/allowed_signers" --require-signed-plan --actor team-lead
replayctl plan --consumer billing --stream DLQ_BILLING --failure-group "$group" \
  --reason "payment provider outage fixed; re-run the charges it refused" --ticket TUT-1 -o "$work/job.json" \
  --sign-key "$work/planner_key"
replayctl show "$work/job.json" >/dev/null
replayctl validate --ledger "$work/job.json"
# With no completed charge in the ledger, plan assumed 1 external call per target; shadow
# measures 2 (a charge and a receipt) and its verdict fails (exit 4) until the operator accepts
# the measured count, which execute then budgets from.
set +e; replayctl shadow "$work/job.json" >"$work/shadow-1.out" 2>&1; code=$?; set -e
cat "$work/shadow-1.out"
[ "$code" -eq 4 ] || fail "first shadow exited $code, want 4 (calls above the plan's estimate)"
grep -q "shadow would make 40 external calls, 100.0% above the plan's expected 20" "$work/shadow-1.out" || fail "first shadow did not say why it failed"
replayctl shadow "$work/job.json" --max-calls-over 1
set +e; replayctl execute "$work/job.json" --yes >"$work/execute-0.out" 2>&1; code=$?; set -e
[ "$code" -eq 3 ] && grep -q "needs 1 approval" "$work/execute-0.out" || fail "execute ran without the approval the policy asks for (exit $code)"
set +e; replayctl approve "$work/job.json" --sign-key "$work/planner_key" --note "my own plan" >"$work/approve-self.out" 2>&1; code=$?; set -e
[ "$code" -eq 3 ] && grep -q "signed the plan" "$work/approve-self.out" || fail "the planner's key approved its own plan (exit $code)"
replayctl approve "$work/job.json" --sign-key "$work/second_key" --note "checked the 20 refused charges against the provider's outage window"
replayctl log --verify "$(jq -r .jobId "$work/job.json")"
replayctl execute "$work/job.json" --dry-run >/dev/null
replayctl execute "$work/job.json" --yes
job=$(jq -r .jobId "$work/job.json")
replayctl status "$job"
replayctl --json status "$job" >"$work/status.json"
replayctl reconcile --consumer billing --dry-run

# --- what the tutorial promises ------------------------------------------------------------
completed=$(jq '.counts.completed' "$work/status.json")
status=$(jq -r '.status' "$work/status.json")
[ "$status" = completed ] && [ "$completed" -eq "$orders" ] || fail "job $job is $status with $completed completed, want completed with $orders"
charged=$(psql -qtA "$base_url" -c "select count(distinct order_id) from $schema.billing_provider_charges")
dups=$(psql -qtA "$base_url" -c "select count(*) from (select order_id from $schema.billing_provider_charges group by 1 having count(*) > 1) d")
[ "$charged" -eq "$orders" ] || fail "$charged orders charged, want $orders"
[ "$dups" -eq 0 ] || fail "$dups orders charged more than once"
say "every one of the $orders orders charged exactly once (job $job $status, $completed targets)"
say "done in $(( $(date +%s) - started ))s"
