package bundles_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

// ociRegistry is an OCI distribution registry (go-containerregistry's, in
// memory) that counts the blobs it serves.
type ociRegistry struct {
	srv   *httptest.Server
	mu    sync.Mutex
	blobs int
}

func newOCIRegistry(t *testing.T) *ociRegistry {
	t.Helper()
	r := &ociRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.mu.Lock()
			r.blobs++
			r.mu.Unlock()
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *ociRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// push pushes a bundle of revision as an OCI artifact whose one layer is
// the bundle tarball, as `opa` and `oras push` lay it out.
func (r *ociRegistry) push(t *testing.T, ref, revision string) {
	t.Helper()
	data, err := os.ReadFile(writeFile(t, t.TempDir(), "b.tar.gz", built(t, revision)))
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(data, types.OCILayer))
	require.NoError(t, err)
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	tag, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img))
}

func (r *ociRegistry) blobsServed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobs
}

// TestOCISourceNewRevision: a bundle pushed to an OCI registry activates
// through OPA's OCI downloader; polling an unchanged tag fetches no blob
// and activates nothing; a new push to the tag activates.
func TestOCISourceNewRevision(t *testing.T) {
	ctx := context.Background()
	reg := newOCIRegistry(t)
	ref := reg.host() + "/policies/mandate:prod"
	reg.push(t, ref, "r1")

	// A plain-http registry: its url in the service configuration.
	a, src, err := bundles.NewSource(bundles.SourceOptions{URL: "oci://" + ref, Service: []byte("url: " + reg.srv.URL + "\n")})
	require.NoError(t, err)
	defer src.(*bundles.HTTPSource).Close()
	require.NoError(t, src.Poll(ctx))
	require.NotNil(t, a.Current())
	assert.Equal(t, "r1", a.Current().Revision())
	assert.Equal(t, "oci://"+ref, a.Status().Source)
	first, blobs := a.Status(), reg.blobsServed()
	require.Positive(t, blobs)

	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, first, a.Status(), "an unchanged tag is not activated again")
	assert.Equal(t, blobs, reg.blobsServed(), "nor are its blobs fetched again")

	reg.push(t, ref, "r2")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r2", a.Current().Revision(), "the new push activates")

	// A tag that is not there: a failure of the source; r2 keeps serving.
	missing := &bundles.HTTPSource{URL: "oci://" + reg.host() + "/policies/mandate:nope", Service: []byte("url: " + reg.srv.URL + "\n"), Activator: a}
	defer missing.Close()
	err = missing.Poll(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unable to fetch bundle oci://"+reg.host()+"/policies/mandate:nope")
	assert.Equal(t, "r2", a.Current().Revision())
	assert.Equal(t, bundles.StepRead, a.Status().LastStep)
}
