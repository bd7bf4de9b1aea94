export { ALGORITHM_V1, V2_PREFIX, InvalidOptionsError, payloadHash, v1, v2 } from "./fingerprint.js";
export type { Hasher, Options } from "./fingerprint.js";
export { tombstoneKey } from "./tombstone.js";
export { BusinessError, Consumer, Effects, NotExecutedError } from "./consumer.js";
export type { Config, Effect, Event, Handler, Lookup, LookupRequest, LookupResult, Result } from "./consumer.js";
export { poolConfig } from "./pgurl.js";
export { METRIC_DELIVERIES, METRIC_DUPLICATE_DELIVERIES, METRIC_LEASE_EXPIRIES, METRIC_PAYLOAD_MISMATCHES, METRIC_UNCERTAIN_AGE, METRIC_UNCERTAIN_ROWS } from "./metrics.js";
export { Batcher } from "./groupcommit.js";
export type { GroupStats } from "./groupcommit.js";
