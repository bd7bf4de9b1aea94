package fingerprint

// CanonicalReference exposes the reference encoder to the differential tests.
var CanonicalReference = canonicalReference
