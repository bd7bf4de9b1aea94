// poolConfig reads a PostgreSQL URL as replayctl and the Go SDK take it: parameters PostgreSQL
// knows as run-time settings (search_path, which the conformance kit and the tests use to give
// each run its own schema) go to the server as -c options, and a URL without a user connects as
// the operating system's user, as libpq and pgx do.

import { userInfo } from "node:os";

import { parse } from "pg-connection-string";
import type { PoolConfig } from "pg";

const settings = ["search_path", "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"];

/** The node-postgres pool configuration of databaseURL. */
export function poolConfig(databaseURL: string, max = 16): PoolConfig {
  const parsed = parse(databaseURL) as Record<string, unknown>;
  const options: string[] = [];
  for (const name of settings) {
    const v = parsed[name];
    if (typeof v === "string" && v !== "") {
      options.push(`-c ${name}=${v.replace(/[\\ ]/g, "\\$&")}`);
      delete parsed[name];
    }
  }
  const cfg = parsed as PoolConfig;
  if (!cfg.user) cfg.user = process.env.PGUSER || userInfo().username;
  if (options.length > 0) cfg.options = [cfg.options, ...options].filter(Boolean).join(" ");
  if (cfg.port === ("" as unknown)) delete cfg.port;
  if (cfg.password === "") delete cfg.password;
  return { ...cfg, max, application_name: cfg.application_name || "replayctl-consumer-ts" };
}
