package fingerprint

// CanonicalReference exposes the reference encoder to the differential tests.
var CanonicalReference = canonicalReference

// CanonicalV2Reference exposes the v2 reference encoder (no options) to the differential tests.
func CanonicalV2Reference(payload []byte) []byte { return canonicalV2(payload, nil, nil) }
