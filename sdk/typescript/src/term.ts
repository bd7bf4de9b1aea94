// A term's reason, where the server reads one: the Go SDK's consumer/term.go. nats-server reads
// the reason of a +TERM since 2.10.4 (nats-server #4697); older servers compare the whole ack body
// with "+TERM", so a term with a reason matches nothing and the message comes back every ack wait
// forever. A term the server ignores is worse than a term without its reason.

const termReasonSince = [2, 10, 4];

/**
 * Whether a server of version ("2.10.4", "v2.11.0-RC.1") reads a term's reason. An unknown or
 * unparsable version (the connection is down right now) counts as too old: a plain term works on
 * every server.
 */
export function termReasonRead(version: string | undefined): boolean {
  const core = (version ?? "").replace(/^v/, "").split("-")[0];
  const parts = core.split(".");
  if (parts.length !== 3) return false;
  for (let i = 0; i < 3; i++) {
    if (!/^[0-9]+$/.test(parts[i])) return false;
    const n = Number(parts[i]);
    if (n !== termReasonSince[i]) return n > termReasonSince[i];
  }
  return true;
}
