package approval

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The SSHSIG namespaces of replayctl's signatures: a signature made for one is refused for the
// others, so an approval cannot be replayed as a policy change or a plan.
const (
	NamespaceApproval = "replayctl-approval"
	NamespacePolicy   = "replayctl-policy"
	NamespaceManifest = "replayctl-manifest"
)

const statementHeader = "replayctl-approval v1"

// Statement is the canonical text an approver signs: every field that decides what the decision
// is good for. Times are UTC to the second; actor and note are Go-quoted, so no value can forge a
// line of its own.
func Statement(r Record) []byte {
	return fmt.Appendf(nil, "%s\njob: %s\nmanifest: %s\nverdict: %d\ndecision: %s\nactor: %s\nat: %s\nexpires: %s\nnote: %s\n",
		statementHeader, r.JobID, r.ManifestDigest, r.VerdictID, r.Decision, strconv.Quote(r.Actor),
		r.At.UTC().Format(time.RFC3339), r.ExpiresAt.UTC().Format(time.RFC3339), strconv.Quote(r.Note))
}

// ParseStatement reads a statement made by Statement (for a signature made elsewhere, such as with
// a hardware key through ssh-keygen -Y sign).
func ParseStatement(data []byte) (Record, error) {
	var r Record
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 9 || lines[0] != statementHeader {
		return r, fmt.Errorf("not a replayctl approval statement (it starts %q and has 9 lines; print one with `replayctl approve JOB --note ... --print-statement`)", statementHeader)
	}
	field := func(i int, name string) (string, error) {
		v, ok := strings.CutPrefix(lines[i], name+": ")
		if !ok {
			return "", fmt.Errorf("statement line %d: want %q", i+1, name+": ...")
		}
		return v, nil
	}
	var err error
	var verdict, decision, actor, at, expires, note string
	for _, f := range []struct {
		i    int
		name string
		dst  *string
	}{{1, "job", &r.JobID}, {2, "manifest", &r.ManifestDigest}, {3, "verdict", &verdict}, {4, "decision", &decision},
		{5, "actor", &actor}, {6, "at", &at}, {7, "expires", &expires}, {8, "note", &note}} {
		if *f.dst, err = field(f.i, f.name); err != nil {
			return r, err
		}
	}
	if r.VerdictID, err = strconv.ParseInt(verdict, 10, 64); err != nil {
		return r, fmt.Errorf("statement verdict %q: %v", verdict, err)
	}
	r.Decision = Decision(decision)
	if r.Decision != Approved && r.Decision != Rejected {
		return r, fmt.Errorf("statement decision %q: want approved or rejected", decision)
	}
	if r.Actor, err = strconv.Unquote(actor); err != nil {
		return r, fmt.Errorf("statement actor %s: not a quoted string", actor)
	}
	if r.Note, err = strconv.Unquote(note); err != nil {
		return r, fmt.Errorf("statement note %s: not a quoted string", note)
	}
	if r.At, err = time.Parse(time.RFC3339, at); err != nil {
		return r, fmt.Errorf("statement at: %v", err)
	}
	if r.ExpiresAt, err = time.Parse(time.RFC3339, expires); err != nil {
		return r, fmt.Errorf("statement expires: %v", err)
	}
	return r, nil
}

// ManifestStatement is what a planner signs with plan --sign-key: the job and its manifest digest.
func ManifestStatement(jobID, digest string) []byte {
	return fmt.Appendf(nil, "replayctl-manifest v1\njob: %s\nmanifest: %s\n", jobID, digest)
}
