// Package dlq owns the DLQ message format of docs/protocol.md: the header names, how a DLQ
// message is written (the consumer SDK's dead-lettering), how plan parses one, how shadow and
// execute check that the message at a planned sequence is still the planned one, and how execute
// turns one back into a replay. A header added to the format, or another convention of names,
// changes this package and its callers' flags only. It also reads the stream: Open and Fetch find a job's planned messages (source.go).
package dlq
