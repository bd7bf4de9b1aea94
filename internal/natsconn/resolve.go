package natsconn

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
)

// Resolve merges f, then natscli's environment variables (read with getenv), then the natscli
// context (--context, else $NATS_CONTEXT, else the selected one), then DefaultURL: the first that
// gives a value wins, field by field, as in natscli. Credentials go as a whole: a user, token,
// creds or nkey given by flag or environment replaces all of the context's, so a context's user
// never goes with a flag's creds file; a password alone is the context user's. A --user without a
// password is a token, as in natscli. Files are checked here, before anything connects.
func Resolve(f Flags, getenv func(string) string) (Settings, error) {
	pick := func(value, flag, env string) setting {
		if strings.TrimSpace(value) != "" {
			return setting{value, "--" + flag}
		}
		if v := getenv(env); strings.TrimSpace(v) != "" {
			return setting{v, "$" + env}
		}
		return setting{}
	}
	var s Settings
	url := pick(f.URL, "nats-url", "NATS_URL")
	s.user, s.password, s.token = pick(f.User, "user", "NATS_USER"), pick(f.Password, "password", "NATS_PASSWORD"), pick(f.Token, "token", "NATS_TOKEN")
	s.creds, s.nkey = pick(f.Creds, "creds", "NATS_CREDS"), pick(f.NKey, "nkey", "NATS_NKEY")
	s.cert, s.key, s.ca = pick(f.TLSCert, "tlscert", "NATS_CERT"), pick(f.TLSKey, "tlskey", "NATS_KEY"), pick(f.TLSCA, "tlsca", "NATS_CA")
	if s.user.set() && !s.password.set() {
		if s.token.set() {
			return Settings{}, settingsErrorf("%s without a password is a token (as in natscli), and %s gives another one; give one token",
				s.user.source, s.token.source)
		}
		s.token, s.user = s.user, setting{}
	}

	ctx, err := loadContext(pick(f.Context, "context", "NATS_CONTEXT"), getenv)
	if err != nil {
		return Settings{}, err
	}
	s.servers = url
	if ctx != nil {
		s.context, s.contextPath = ctx.name, ctx.path
		s.inboxPrefix, s.tlsFirst = ctx.file.InboxPrefix, ctx.file.TLSFirst
		from := setting{source: fmt.Sprintf("context %q", ctx.name)}
		fromContext := func(v string) setting {
			if strings.TrimSpace(v) == "" {
				return setting{}
			}
			return setting{v, from.source}
		}
		if !s.servers.set() {
			s.servers = fromContext(ctx.file.URL)
		} else if c := strings.TrimSpace(ctx.file.URL); c != "" && c != strings.TrimSpace(url.value) {
			s.notes = append(s.notes, fmt.Sprintf("%s overrides the url of NATS context %q, as in natscli", url.source, ctx.name))
		}
		switch {
		case !s.user.set() && !s.password.set() && !s.token.set() && !s.creds.set() && !s.nkey.set():
			s.user, s.password, s.token = fromContext(ctx.file.User), fromContext(ctx.file.Password), fromContext(ctx.file.Token)
			s.creds, s.nkey = fromContext(expandPath(ctx.file.Creds, getenv)), fromContext(expandPath(ctx.file.NKey, getenv))
		case s.password.set() && !s.user.set() && !s.token.set() && !s.creds.set() && !s.nkey.set():
			// A password alone changes the context user's password.
			s.user = fromContext(ctx.file.User)
		}
		for _, tls := range []struct {
			field *setting
			value string
		}{{&s.cert, ctx.file.Cert}, {&s.key, ctx.file.Key}, {&s.ca, ctx.file.CA}} {
			if !tls.field.set() {
				*tls.field = fromContext(expandPath(tls.value, getenv))
			}
		}
	}
	if !s.servers.set() {
		s.servers = setting{DefaultURL, "the default"}
	}
	if err := s.check(getenv); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// check refuses settings that cannot work and resolves secret references, in place.
func (s *Settings) check(getenv func(string) string) error {
	var kinds []string
	for name, v := range map[string]setting{"a user": s.user, "a token": s.token, "creds": s.creds, "an nkey": s.nkey} {
		if v.set() {
			kinds = append(kinds, name+" ("+v.source+")")
		}
	}
	if len(kinds) > 1 {
		slices.Sort(kinds)
		return settingsErrorf("NATS credentials %s: give one kind", strings.Join(kinds, " and "))
	}
	if s.password.set() && !s.user.set() {
		return settingsErrorf("a NATS password (%s) without a user: give --user or $NATS_USER with it", s.password.source)
	}
	if s.cert.set() != s.key.set() {
		return settingsErrorf("a TLS client certificate and its key go together: cert %q, key %q", s.cert.value, s.key.value)
	}
	for _, secret := range []struct {
		name string
		v    *setting
	}{{"password", &s.password}, {"token", &s.token}} {
		if !secret.v.set() {
			continue
		}
		value, err := resolveSecret(secret.v.value, getenv)
		if err != nil {
			return settingsErrorf("the NATS %s (%s): %w", secret.name, secret.v.source, err)
		}
		secret.v.value = value
	}
	for _, file := range []struct {
		name string
		v    *setting
	}{{"creds", &s.creds}, {"nkey", &s.nkey}, {"TLS certificate", &s.cert}, {"TLS key", &s.key}, {"TLS CA", &s.ca}} {
		if !file.v.set() {
			continue
		}
		path, err := filePath(file.v.value)
		if err != nil {
			return settingsErrorf("the NATS %s (%s): %w", file.name, file.v.source, err)
		}
		if _, err := os.Stat(path); err != nil {
			return settingsErrorf("the NATS %s file (%s): %w", file.name, file.v.source, err)
		}
		file.v.value = path
	}
	return nil
}

// resolveSecret reads a password or token given as natscontext's references: env://NAME,
// file://PATH, data:;base64,…; anything else is the value itself. op:// and nsc:// need tools
// this package does not run, and are refused rather than sent as a password.
func resolveSecret(ref string, getenv func(string) string) (string, error) {
	lower := strings.ToLower(ref)
	switch {
	case strings.HasPrefix(lower, "env://"):
		name := ref[len("env://"):]
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("env://%s: the variable is not set or empty", name)
		}
		return v, nil
	case strings.HasPrefix(lower, "file://"):
		data, err := os.ReadFile(ref[len("file://"):])
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	case strings.HasPrefix(lower, "data:"):
		header, payload, ok := strings.Cut(ref[len("data:"):], ",")
		if !ok || !strings.Contains(header, ";base64") {
			return "", fmt.Errorf("a data: reference must be data:;base64,<value>")
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return "", fmt.Errorf("a data: reference is not base64")
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	case strings.HasPrefix(lower, "op://"), strings.HasPrefix(lower, "nsc://"):
		scheme, _, _ := strings.Cut(lower, ":")
		return "", fmt.Errorf("%s:// references are not supported here; export the value to a variable and use env://NAME", scheme)
	}
	return ref, nil
}

// filePath returns the file a creds, nkey or TLS setting names: a path or a file:// URI. Other
// natscontext schemes are refused: nats.go reads these from files.
func filePath(ref string) (string, error) {
	lower := strings.ToLower(ref)
	if strings.HasPrefix(lower, "file://") {
		return ref[len("file://"):], nil
	}
	for _, scheme := range []string{"env://", "data:", "op://", "nsc://"} {
		if strings.HasPrefix(lower, scheme) {
			return "", fmt.Errorf("%s references are not supported here; write it to a file (mode 0600) and give its path", strings.TrimSuffix(scheme, "//"))
		}
	}
	return ref, nil
}

// expandPath expands $VAR and a leading ~ in a path read from a context, as natscontext does.
func expandPath(path string, getenv func(string) string) string {
	path = os.Expand(path, getenv)
	if !strings.HasPrefix(path, "~") {
		return path
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir + path[1:]
	}
	return path
}

func sorted(names []string) []string {
	slices.Sort(names)
	return names
}
