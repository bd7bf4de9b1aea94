export { ALGORITHM_V1, V2_PREFIX, InvalidOptionsError, payloadHash, v1, v2 } from "./fingerprint.js";
export type { Hasher, Options } from "./fingerprint.js";
export { tombstoneKey } from "./tombstone.js";
