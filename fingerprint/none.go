package fingerprint

// AlgorithmNone marks a ledger row imported from a system that kept no request fingerprint
// (`replayctl ledger import` without requestHash): its event ID alone decides, as that system's
// dedup did. Every payload matches it, so a later delivery of the event is a duplicate, never a
// conflict; NoneHash is the request_hash such a row stores.
const AlgorithmNone = "none"

// NoneHash is the request_hash of a row under AlgorithmNone.
const NoneHash = "none"
