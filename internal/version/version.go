// Package version is the version of the dtpa commands, printed by
// --version, so that a report or a bug can be tied to the build that made
// it.
package version

import (
	"fmt"
	"runtime/debug"
)

// Version is the release of the commands and of the tracer, which is
// compiled with it (tracer/tracer.mk) and records it in its trace headers.
const Version = "0.1.0"

// String is Version with the source revision the binary was built from,
// when the build recorded one ("0.1.0 (rev 41215a3, modified)").
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	var rev string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return Version
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if modified {
		return fmt.Sprintf("%s (rev %s, modified)", Version, rev)
	}
	return fmt.Sprintf("%s (rev %s)", Version, rev)
}
