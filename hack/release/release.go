package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// PluginBinary is the kubectl plugin's executable name: kubectl finds
// kubectl-mandate on PATH for `kubectl mandate`.
const PluginBinary = "kubectl-mandate"

// DefaultPlatforms are those krew users run kubectl on.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// DefaultURLBase is where a release's archives are downloaded from.
const DefaultURLBase = "https://github.com/mandate-dev/mandate/releases/download/{version}"

// buildinfoPkg is where -ldflags set the version, commit and date.
const buildinfoPkg = "github.com/mandate-dev/mandate/buildinfo"

// semver is krew's rule for spec.version: v, then MAJOR.MINOR.PATCH, then
// an optional prerelease and build metadata.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Options say what to build.
type Options struct {
	ModuleDir string
	Version   string
	Commit    string
	Created   time.Time
	Platforms []string
	URLBase   string
	Out       string
}

// Validate checks the version and the platforms.
func (o Options) Validate() error {
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("--version %q is not a semantic version vMAJOR.MINOR.PATCH[-PRERELEASE], which krew requires", o.Version)
	}
	if len(o.Platforms) == 0 {
		return fmt.Errorf("--platforms names none")
	}
	for _, p := range o.Platforms {
		if goos, goarch, ok := strings.Cut(p, "/"); !ok || goos == "" || goarch == "" {
			return fmt.Errorf("--platforms: %q is not OS/ARCH", p)
		}
	}
	return nil
}

// Archive is one platform's archive.
type Archive struct {
	OS, Arch string
	// Path of the archive; Name its base name.
	Path, Name string
	SHA256     string
	// Binary is the executable's name inside it.
	Binary string
}

// Result is what Build wrote.
type Result struct {
	Archives []Archive
	Manifest string
}

// Build builds and archives the plugin for every platform, then writes
// SHA256SUMS and the krew manifest from the archives as written.
func Build(ctx context.Context, o Options) (Result, error) {
	var res Result
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return res, fmt.Errorf("unable to create %s: %w", o.Out, err)
	}
	work, err := os.MkdirTemp("", "mandate-release-")
	if err != nil {
		return res, fmt.Errorf("unable to create a build directory: %w", err)
	}
	defer os.RemoveAll(work)
	var sums strings.Builder
	for _, p := range o.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		a := Archive{OS: goos, Arch: goarch, Binary: PluginBinary}
		if goos == "windows" {
			a.Binary += ".exe"
		}
		bin := filepath.Join(work, goos+"_"+goarch, a.Binary)
		fmt.Fprintf(os.Stderr, "building %s for %s (a platform's first build compiles every dependency: minutes on 2 cores) ...\n", PluginBinary, p)
		if err := buildBinary(ctx, o, goos, goarch, bin); err != nil {
			return res, err
		}
		a.Name = fmt.Sprintf("%s_%s_%s_%s.tar.gz", PluginBinary, o.Version, goos, goarch)
		a.Path = filepath.Join(o.Out, a.Name)
		if a.SHA256, err = writeArchive(a.Path, bin, a.Binary, o.Created); err != nil {
			return res, err
		}
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, a.Name)
		res.Archives = append(res.Archives, a)
	}
	if err := os.WriteFile(filepath.Join(o.Out, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		return res, fmt.Errorf("unable to write SHA256SUMS: %w", err)
	}
	manifest, err := Manifest(o.Version, strings.ReplaceAll(o.URLBase, "{version}", o.Version), res.Archives)
	if err != nil {
		return res, err
	}
	res.Manifest = filepath.Join(o.Out, PluginName+".yaml")
	if err := os.WriteFile(res.Manifest, manifest, 0o644); err != nil {
		return res, fmt.Errorf("unable to write the krew manifest: %w", err)
	}
	return res, nil
}

// buildBinary runs go build of cmd/kubectl-mandate for goos/goarch, static
// and reproducible.
func buildBinary(ctx context.Context, o Options, goos, goarch, out string) error {
	ldflags := strings.Join([]string{"-s", "-w",
		"-X", buildinfoPkg + ".version=" + o.Version,
		"-X", buildinfoPkg + ".commit=" + o.Commit,
		"-X", buildinfoPkg + ".date=" + o.Created.Format(time.RFC3339)}, " ")
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/kubectl-mandate")
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("unable to build %s for %s/%s: %w", PluginBinary, goos, goarch, err)
	}
	return nil
}

// writeArchive writes a tar.gz holding the file bin as name (mode 0755,
// owned by root, stamped created) and returns its sha256.
func writeArchive(path, bin, name string, created time.Time) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("unable to read %s: %w", bin, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("unable to create %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(f, h), gzip.BestCompression)
	if err != nil {
		return "", err
	}
	gz.ModTime = created // the header's own time, for one checksum per commit
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: created, Typeflag: tar.TypeReg,
		Uname: "root", Gname: "root", Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	if _, err := tw.Write(data); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err := gz.Close(); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
