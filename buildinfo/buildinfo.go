// Package buildinfo owns the facts of the running Mandate build: its
// version, Git commit, build date, and the Go and OPA versions inside it.
// The Makefile's build and image targets set them with
// -ldflags "-X github.com/mandate-dev/mandate/buildinfo.version=…"
// (and .commit, .date); a binary built without them falls back to what the
// Go toolchain recorded (debug.ReadBuildInfo: the module version,
// vcs.revision, vcs.time). The same facts are printed by `mandate version`,
// logged once at `serve` startup and exported as the gauge
// mandate_build_info on serve's /metrics.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"

	opaversion "github.com/open-policy-agent/opa/v1/version"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Set at link time with -ldflags -X (see the Makefile); empty means "ask
// debug.ReadBuildInfo".
var (
	version string
	commit  string
	date    string
)

// Unknown is what a fact shows when neither -ldflags nor the toolchain
// recorded it (a `go run`, or a build with -buildvcs=false).
const Unknown = "unknown"

// Info is the build of this binary.
type Info struct {
	// Version is Mandate's version: a release tag such as v0.2.0, or
	// git describe's output for a build between tags.
	Version string `json:"version"`
	// Commit is the Git commit built, with "-dirty" when the work tree
	// had changes.
	Commit string `json:"commit"`
	// BuildDate is when the commit was made (RFC 3339), so two builds of
	// one commit are identical.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// OPAVersion is the version of the OPA module compiled in.
	OPAVersion string `json:"opaVersion"`
	// Platform is the binary's GOOS/GOARCH.
	Platform string `json:"platform"`
}

var (
	once sync.Once
	info Info
)

// Get returns the build of this binary.
func Get() Info {
	once.Do(func() { info = resolve(version, commit, date, readBuildInfo()) })
	return info
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// resolve prefers the values set at link time and falls back to the
// toolchain's build info.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Commit: commit, BuildDate: date, GoVersion: runtime.Version(),
		OPAVersion: opaversion.Version, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		var revision, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			case "vcs.time":
				if i.BuildDate == "" {
					i.BuildDate = s.Value
				}
			}
		}
		if i.Commit == "" && revision != "" {
			i.Commit = revision
			if modified == "true" {
				i.Commit += "-dirty"
			}
		}
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
	}
	for _, s := range []*string{&i.Version, &i.Commit, &i.BuildDate} {
		if *s == "" {
			*s = Unknown
		}
	}
	return i
}

// KeysAndValues are the facts as logr key/value pairs, for the one
// startup line of serve.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Commit, "buildDate", i.BuildDate,
		"goVersion", i.GoVersion, "opaVersion", i.OPAVersion, "platform", i.Platform}
}

// MetricName is the gauge that exports the build on /metrics.
const MetricName = "mandate_build_info"

var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: MetricName,
	Help: "Always 1; its labels name the build of this Mandate: version, Git commit, and the Go and OPA versions inside it.",
}, []string{"version", "commit", "go_version", "opa_version"})

func init() {
	metrics.Registry.MustRegister(buildInfo)
	i := Get()
	buildInfo.WithLabelValues(i.Version, i.Commit, i.GoVersion, i.OPAVersion).Set(1)
}
