package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
)

// TestImageDigest: image.digest (what `make image` writes to
// bin/mandate-image.digest) pins the container to repository@digest,
// whatever the tag; without it the tag (default: appVersion) names it; a
// digest that is not sha256:<64 hex> is refused by the schema.
func TestImageDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	image := func(args ...string) string {
		d := typed[appsv1.Deployment](t, find(t, render(t, release, namespace, args...), "Deployment", fullname))
		require.Len(t, d.Spec.Template.Spec.Containers, 1)
		return d.Spec.Template.Spec.Containers[0].Image
	}
	assert.Equal(t, "registry.example/mandate@"+digest,
		image("--set", "image.repository=registry.example/mandate", "--set", "image.tag=v9", "--set", "image.digest="+digest))
	assert.Equal(t, "registry.example/mandate:v9", image("--set", "image.repository=registry.example/mandate", "--set", "image.tag=v9"))
	assert.True(t, strings.HasPrefix(image(), "ghcr.io/mandate-dev/mandate:"), "the default image is tagged")

	for _, bad := range []string{"0123abcd", "sha256:XYZ", "sha512:" + strings.Repeat("0", 128)} {
		out, err := helm(t, "template", release, chartDir, "--namespace", namespace, "--set", "image.digest="+bad)
		if assert.Error(t, err, "image.digest=%s", bad) {
			assert.Contains(t, out, "/image/digest", "image.digest=%s", bad)
		}
	}
}
