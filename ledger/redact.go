package ledger

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

const redactedPassword = "xxxxx"

var (
	// queryPassword matches the values of password and sslpassword query parameters of a URL.
	queryPassword = regexp.MustCompile(`(?i)[?&](?:ssl)?password=([^&#]*)`)
	// strandedUserinfo matches ":secret@" anywhere; used only when a URL's structure is ambiguous.
	strandedUserinfo = regexp.MustCompile(`:([^@]+)@`)
	// keywordPassword matches password= and sslpassword= values in a key=value DSN, with libpq's
	// quoting and backslash escapes; an unterminated quote runs to the end, so it is masked too.
	keywordPassword = regexp.MustCompile(`(?is)\b(?:ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)*)`)
	// backslashEscape matches one escaped character of a DSN value.
	backslashEscape = regexp.MustCompile(`\\(.)`)
)

// RedactURL returns databaseURL with every password replaced by "xxxxx", for error messages and
// logs. It accepts both forms pgx does: postgres:// URLs (userinfo and ?password= / ?sslpassword=)
// and key=value DSNs. A malformed URL, which is exactly what reaches error messages, is masked on a
// best-effort basis that prefers hiding too much over leaking.
func RedactURL(databaseURL string) string {
	var b strings.Builder
	last := 0
	for _, s := range passwordSpans(databaseURL) {
		b.WriteString(databaseURL[last:s[0]])
		b.WriteString(redactedPassword)
		last = s[1]
	}
	b.WriteString(databaseURL[last:])
	return b.String()
}

// passwordSpans returns the byte ranges of databaseURL that hold passwords, sorted and merged.
func passwordSpans(databaseURL string) [][2]int {
	rest, ok := strings.CutPrefix(databaseURL, "postgresql://")
	if !ok {
		rest, ok = strings.CutPrefix(databaseURL, "postgres://")
	}
	var spans [][2]int
	add := func(groups [][]int, offset int) {
		for _, g := range groups {
			if g[3] > g[2] {
				spans = append(spans, [2]int{offset + g[2], offset + g[3]})
			}
		}
	}
	if !ok {
		add(keywordPassword.FindAllStringSubmatchIndex(databaseURL, -1), 0)
		return mergeSpans(spans)
	}
	offset := len(databaseURL) - len(rest)
	add(queryPassword.FindAllStringSubmatchIndex(rest, -1), offset)
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		slash = len(rest)
	}
	// pgx, like libpq, ends the userinfo at the first '@' before any '/'; the last one also covers
	// an unescaped '@' inside the password.
	if at := strings.LastIndexByte(rest[:slash], '@'); at >= 0 {
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 && colon+1 < at {
			spans = append(spans, [2]int{offset + colon + 1, offset + at})
		}
	} else if strings.IndexByte(rest, '@') >= 0 {
		// No userinfo, yet an '@' further on: a password with an unescaped '/' moved its '@' into
		// the path or query, so every ":...@" run may be one.
		add(strandedUserinfo.FindAllStringSubmatchIndex(rest, -1), offset)
	}
	return mergeSpans(spans)
}

func mergeSpans(spans [][2]int) [][2]int {
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var out [][2]int
	for _, s := range spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// scrubPasswords returns err with every password of databaseURL, as written and as decoded,
// removed from its message. It backs up RedactURL for text that libraries write themselves: pgx
// quotes a connection string it cannot parse, and its own redaction misses some DSN spellings.
func scrubPasswords(err error, databaseURL string) error {
	msg := err.Error()
	scrubbed := msg
	for _, s := range passwordSpans(databaseURL) {
		raw := databaseURL[s[0]:s[1]]
		forms := []string{raw, backslashEscape.ReplaceAllString(strings.Trim(raw, "'"), "$1")}
		if decoded, err := url.PathUnescape(raw); err == nil {
			forms = append(forms, decoded)
		}
		for _, f := range forms {
			if f != "" {
				scrubbed = strings.ReplaceAll(scrubbed, f, redactedPassword)
			}
		}
	}
	if scrubbed == msg {
		return err
	}
	return &scrubbedError{msg: scrubbed, err: err}
}

// scrubbedError shows a scrubbed message while keeping the original chain for errors.Is.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Unwrap() error { return e.err }
