package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	opaversion "github.com/open-policy-agent/opa/v1/version"
	"github.com/stretchr/testify/assert"
)

func TestResolve(t *testing.T) {
	recorded := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/mandate-dev/mandate", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"}}}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "set by -ldflags, which win", version: "v0.2.0", commit: "def456", date: "2026-11-25T00:00:00Z", bi: recorded,
			want: Info{Version: "v0.2.0", Commit: "def456", BuildDate: "2026-11-25T00:00:00Z", GoVersion: "go1.99.1", OPAVersion: opaversion.Version, Platform: platform}},
		{name: "recorded by the toolchain", bi: recorded,
			want: Info{Version: "v1.2.3", Commit: "abc123-dirty", BuildDate: "2026-01-02T03:04:05Z", GoVersion: "go1.99.1", OPAVersion: opaversion.Version, Platform: platform}},
		{name: "a devel build without VCS stamps", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: Unknown, Commit: Unknown, BuildDate: Unknown, GoVersion: runtime.Version(), OPAVersion: opaversion.Version, Platform: platform}},
		{name: "no build info",
			want: Info{Version: Unknown, Commit: Unknown, BuildDate: Unknown, GoVersion: runtime.Version(), OPAVersion: opaversion.Version, Platform: platform}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resolve(tc.version, tc.commit, tc.date, tc.bi))
		})
	}
}
