// Command release builds the kubectl plugin's release output: for each
// platform a static kubectl-mandate binary (its version, commit and date
// set by -ldflags, as make build sets mandate's) in a tar.gz archive, the
// archives' SHA256SUMS, and the krew plugin manifest mandate.yaml naming
// each archive by its URL and sha256 (written here, never published from
// here). Every timestamp in an archive is SOURCE_DATE_EPOCH, so two builds
// of one commit with one Go toolchain give the same checksums. `make
// release` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		o         Options
		epoch     string
		platforms string
	)
	flag.StringVar(&o.ModuleDir, "module", ".", "Mandate's module directory (holds go.mod and cmd/kubectl-mandate)")
	flag.StringVar(&o.Version, "version", "", "the release's semantic version, vMAJOR.MINOR.PATCH[-PRERELEASE] (krew requires one)")
	flag.StringVar(&o.Commit, "commit", "unknown", "the Git commit built")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 stamped on every archived file (default: $SOURCE_DATE_EPOCH, else 0)")
	flag.StringVar(&platforms, "platforms", strings.Join(DefaultPlatforms, ","), "OS/ARCH pairs to build, comma-separated")
	flag.StringVar(&o.URLBase, "url-base", DefaultURLBase, "where the archives will be downloaded from; {version} is replaced by --version")
	flag.StringVar(&o.Out, "out", "bin/release", "directory to write the archives, SHA256SUMS and the krew manifest into")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "release: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	secs, err := strconv.ParseInt(cmpOr(epoch, "0"), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: --source-date-epoch %q is not a number of seconds\n", epoch)
		os.Exit(2)
	}
	o.Created = time.Unix(secs, 0).UTC()
	for _, p := range strings.Split(platforms, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.Platforms = append(o.Platforms, p)
		}
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Build(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, a := range res.Archives {
		fmt.Printf("%s  %s\n", a.SHA256, a.Path)
	}
	fmt.Printf("krew manifest: %s (kubectl krew install --manifest %s --archive ARCHIVE)\n", res.Manifest, res.Manifest)
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
