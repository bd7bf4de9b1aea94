package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// versionString describes this binary for --version: the module version (a tag when installed
// with go install module@version, "(devel)" from a checkout), the VCS commit it was built from,
// with its time and whether the tree had local changes, and the Go version.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	commit := "commit unknown"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = "commit " + rev[:min(12, len(rev))]
		if at := settings["vcs.time"]; at != "" {
			commit += " (" + at + ")"
		}
		if settings["vcs.modified"] == "true" {
			commit += ", modified"
		}
	}
	return strings.Join([]string{version, commit, fmt.Sprintf("built with %s", bi.GoVersion)}, ", ")
}
