// Command image builds Mandate's container image without a container
// engine: a static mandate binary (CGO_ENABLED=0, -trimpath, its version,
// commit and date set by -ldflags) in one layer on an empty base, run as
// the non-root user 65532:65532, with no shell. It writes an OCI image
// layout (what `crane push DIR REF` pushes with this very digest), a
// docker-style tarball (for `docker load`, `podman load`, `kind load
// image-archive`) and the digest, and prints the digest. Every timestamp
// in the image is SOURCE_DATE_EPOCH, so two builds of one commit with one
// Go toolchain give the same digest. `make image` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	var (
		o     Options
		epoch string
	)
	flag.StringVar(&o.ModuleDir, "module", ".", "Mandate's module directory (holds go.mod and cmd/mandate)")
	flag.StringVar(&o.Arch, "arch", "amd64", "GOARCH of the image (linux only)")
	flag.StringVar(&o.Version, "version", "dev", "Mandate's version (git describe)")
	flag.StringVar(&o.Commit, "commit", "unknown", "the Git commit built")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 stamped on every file and the image (default: $SOURCE_DATE_EPOCH, else 0)")
	flag.StringVar(&o.Repository, "repository", DefaultRepository, "repository the tarball's tag names, and org.opencontainers.image.source")
	flag.StringVar(&o.Layout, "layout", "bin/mandate-image", "OCI image layout directory to write (replaced)")
	flag.StringVar(&o.Tarball, "tarball", "bin/mandate-image.tar", "docker-style image tarball to write (\"\" for none)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "image: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if epoch == "" {
		epoch = "0"
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: --source-date-epoch %q is not a number of seconds\n", epoch)
		os.Exit(2)
	}
	o.Created = time.Unix(secs, 0).UTC()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("building the linux/%s mandate binary (the first build compiles every dependency: minutes on 2 cores) ...\n", o.Arch)
	res, err := Build(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image %s (linux/%s, %s %s, %.1f MiB compressed)\n", res.Digest, o.Arch, o.Version, o.Commit, float64(res.Size)/(1<<20))
	fmt.Printf("  OCI layout: %s (crane push %s %s:%s)\n", o.Layout, o.Layout, o.Repository, Tag(o.Version))
	if o.Tarball != "" {
		fmt.Printf("  tarball:    %s (docker load -i %s)\n", o.Tarball, o.Tarball)
	}
	fmt.Printf("  digest:     %s (helm install ... --set image.digest=%s)\n", o.Layout+".digest", res.Digest)
}
