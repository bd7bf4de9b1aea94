package natsconn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// contextFile is a natscli context as github.com/nats-io/jsm.go's natscontext stores it, one JSON
// file per context. Fields this package cannot honour are read so it can refuse them by name
// rather than connect differently from natscli.
type contextFile struct {
	URL         string `json:"url"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Token       string `json:"token"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	InboxPrefix string `json:"inbox_prefix"`
	TLSFirst    bool   `json:"tls_first"`

	NSC             string   `json:"nsc"`
	SocksProxy      string   `json:"socks_proxy"`
	JSDomain        string   `json:"jetstream_domain"`
	JSAPIPrefix     string   `json:"jetstream_api_prefix"`
	UserJWT         string   `json:"user_jwt"`
	UserSeed        string   `json:"user_seed"`
	WinCertStore    string   `json:"windows_cert_store"`
	WinCertMatch    string   `json:"windows_cert_match"`
	WinCertMatchBy  string   `json:"windows_cert_match_by"`
	WinCACertsMatch []string `json:"windows_ca_certs_match"`
}

// unsupported names the fields c sets that this package does not implement; connecting without
// them would reach another server, account or domain than natscli does.
func (c *contextFile) unsupported() []string {
	var names []string
	for name, set := range map[string]bool{
		"nsc": c.NSC != "", "socks_proxy": c.SocksProxy != "", "jetstream_domain": c.JSDomain != "",
		"jetstream_api_prefix": c.JSAPIPrefix != "", "user_jwt": c.UserJWT != "", "user_seed": c.UserSeed != "",
		"windows_cert_store": c.WinCertStore != "" || c.WinCertMatch != "" || c.WinCertMatchBy != "" || len(c.WinCACertsMatch) > 0,
	} {
		if set {
			names = append(names, name)
		}
	}
	return names
}

// loadedContext is a context file read from path under name.
type loadedContext struct {
	name, path string
	file       contextFile
}

// configDir is natscli's configuration directory: $XDG_CONFIG_HOME/nats, else ~/.config/nats
// with the home directory of the user the process runs as (natscontext asks the OS, not $HOME).
func configDir(getenv func(string) string) (string, error) {
	if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		return filepath.Join(xdg, "nats"), nil
	}
	home := ""
	if u, err := user.Current(); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", settingsErrorf("finding natscli's contexts: %w; set XDG_CONFIG_HOME", err)
		}
	}
	return filepath.Join(home, ".config", "nats"), nil
}

// loadContext reads the context named by name (a flag or $NATS_CONTEXT), else the one natscli
// selected (context.txt), else none: it returns nil without an error when no context is named
// or selected. A name ending in .json that is an existing file is read as that file, as natscli
// does.
func loadContext(name setting, getenv func(string) string) (*loadedContext, error) {
	if name.set() && strings.HasSuffix(name.value, ".json") {
		if info, err := os.Stat(name.value); err == nil && !info.IsDir() {
			return readContext(strings.TrimSuffix(filepath.Base(name.value), ".json"), name.value, name.source)
		}
	}
	dir, err := configDir(getenv)
	if err != nil {
		return nil, err
	}
	source := name.source
	if !name.set() {
		selected, err := os.ReadFile(filepath.Join(dir, "context.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, settingsErrorf("reading natscli's selected context: %w", err)
		}
		name = setting{strings.TrimSpace(string(selected)), "selected in " + filepath.Join(dir, "context.txt")}
		if name.value == "" {
			return nil, nil
		}
		source = name.source
	}
	if strings.Contains(name.value, "..") || strings.ContainsRune(name.value, os.PathSeparator) {
		return nil, settingsErrorf("invalid context name %q (%s): a name, or the path of a .json file that exists", name.value, source)
	}
	path := filepath.Join(dir, "context", name.value+".json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, settingsErrorf("unknown NATS context %q (%s): no %s; `nats context ls` lists the contexts", name.value, source, path)
	}
	return readContext(name.value, path, source)
}

func readContext(name, path, source string) (*loadedContext, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, settingsErrorf("reading NATS context %q (%s): %w", name, source, err)
	}
	c := &loadedContext{name: name, path: path}
	if err := json.Unmarshal(data, &c.file); err != nil {
		// A syntax error's message quotes the character it stopped at, which may be a password's.
		where := "a field of the wrong type"
		if syntax, ok := errors.AsType[*json.SyntaxError](err); ok {
			where = fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
		} else if typ, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			where = fmt.Sprintf("%s is not a %s", typ.Field, typ.Type)
		}
		return nil, settingsErrorf("NATS context %q (%s) is not a natscli context: %s", name, path, where)
	}
	if names := c.file.unsupported(); len(names) > 0 {
		return nil, settingsErrorf("NATS context %q (%s) sets %s, which this tool does not support; use a context "+
			"with url and user/password, token, creds or nkey, and cert/key/ca", name, path, strings.Join(sorted(names), ", "))
	}
	return c, nil
}
