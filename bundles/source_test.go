package bundles_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

func TestFileSourceReactivatesOnChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := writeFile(t, dir, "bundle.tar.gz", built(t, "r1"))
	a := newActivator(t, bundles.ActivatorOptions{})
	s := &bundles.FileSource{Path: path, Activator: a}
	require.NoError(t, s.Poll(ctx))
	require.Equal(t, "r1", a.Current().Revision())
	activated := a.Status().ActivatedAt

	require.NoError(t, s.Poll(ctx))
	assert.Equal(t, activated, a.Status().ActivatedAt, "an unchanged file is not activated again")

	writeFile(t, dir, "bundle.tar.gz", built(t, "r2"))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(path, later, later))
	require.NoError(t, s.Poll(ctx))
	assert.Equal(t, "r2", a.Current().Revision())
}

// bundleServer serves a bundle by ETag, answering If-None-Match with 304.
type bundleServer struct {
	mu          sync.Mutex
	body        []byte
	etag        string
	fail        bool
	noETag      bool // a plain static file server
	token       string
	requests    atomic.Int64
	notModified atomic.Int64
	downloads   atomic.Int64
}

func (s *bundleServer) set(t *testing.T, revision string) {
	t.Helper()
	data, err := os.ReadFile(writeFile(t, t.TempDir(), "b.tar.gz", built(t, revision)))
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = data, `"`+revision+`"`
}

func (s *bundleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fail:
		http.Error(w, "down", http.StatusServiceUnavailable)
	case s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token:
		http.Error(w, "who are you", http.StatusUnauthorized)
	case r.Header.Get("If-None-Match") == s.etag:
		s.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
	default:
		if !s.noETag {
			w.Header().Set("ETag", s.etag)
		}
		s.downloads.Add(1)
		_, _ = w.Write(s.body)
	}
}

func runSource(t *testing.T, s bundles.Source) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, s.Run(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cancel
}

func TestHTTPSourceETagAndNewRevision(t *testing.T) {
	srv := &bundleServer{token: "s3cret"}
	srv.set(t, "r1")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newActivator(t, bundles.ActivatorOptions{})
	const interval = 20 * time.Millisecond
	runSource(t, &bundles.HTTPSource{URL: ts.URL, Interval: interval, BearerToken: "s3cret", Activator: a})

	require.Eventually(t, func() bool { ev := a.Current(); return ev != nil && ev.Revision() == "r1" }, 30*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return srv.notModified.Load() >= 3 }, 30*time.Second, 5*time.Millisecond, "ETag respected")
	assert.Equal(t, int64(1), srv.downloads.Load(), "the bundle was downloaded once")

	srv.set(t, "r2")
	require.Eventually(t, func() bool { return a.Current().Revision() == "r2" }, 30*time.Second, time.Millisecond)
	assert.Equal(t, int64(2), srv.downloads.Load(), "each revision was downloaded once")
}

// TestHTTPSourceWithoutETags: a server that sends no ETag answers every
// poll with the whole bundle; an unchanged one is not activated again, a
// new one is, and a rollback to the previous bytes is too.
func TestHTTPSourceWithoutETags(t *testing.T) {
	srv := &bundleServer{noETag: true}
	srv.set(t, "r1")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newActivator(t, bundles.ActivatorOptions{})
	src := &bundles.HTTPSource{URL: ts.URL, Activator: a}
	ctx := context.Background()

	require.NoError(t, src.Poll(ctx))
	first := a.Status()
	require.Equal(t, "r1", first.Revision)
	for range 3 {
		require.NoError(t, src.Poll(ctx))
	}
	assert.Equal(t, int64(4), srv.requests.Load(), "downloaded on every poll")
	assert.Equal(t, first.ActivatedAt, a.Status().ActivatedAt, "but activated once")
	assert.Equal(t, first.LastAttempt, a.Status().LastAttempt, "and not even attempted again")

	srv.set(t, "r2")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r2", a.Current().Revision())
	srv.set(t, "r1")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r1", a.Current().Revision(), "a rollback to bytes seen before activates")
}

func TestHTTPSourceBacksOff(t *testing.T) {
	srv := &bundleServer{fail: true}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newActivator(t, bundles.ActivatorOptions{})
	const interval = 10 * time.Millisecond
	start := time.Now()
	cancel := runSource(t, &bundles.HTTPSource{URL: ts.URL, Interval: interval, MaxBackoff: 80 * time.Millisecond, Activator: a})
	defer cancel()
	// Wait for the sixth request: with backoff, the five failures before it
	// were each followed by a delay of Backoff(interval, 80ms, failures) —
	// 20, 40, 80, 80 and 80 ms; without it, 10 ms each. A busy machine only
	// makes the wait longer, never shorter.
	for srv.requests.Load() < 6 {
		require.Less(t, time.Since(start), time.Minute, "the source stopped polling")
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	elapsed := time.Since(start)
	var minimum time.Duration
	for failures := 1; failures <= 5; failures++ {
		minimum += bundles.Backoff(interval, 80*time.Millisecond, failures)
	}
	t.Logf("6 requests in %v (backoff alone takes at least %v)", elapsed, minimum)
	assert.GreaterOrEqual(t, elapsed, minimum)
	assert.Nil(t, a.Current())
}

func TestBackoff(t *testing.T) {
	for failures, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		assert.Equal(t, want, bundles.Backoff(time.Second, 10*time.Second, failures), "failures %d", failures)
	}
	assert.Equal(t, bundles.DefaultMaxBackoff, bundles.Backoff(time.Minute, 0, 100))
}

func TestHTTPSourcePersistedLastGoodWhenUnreachable(t *testing.T) {
	persist := t.TempDir()
	srv := &bundleServer{}
	srv.set(t, "r1")
	ts := httptest.NewServer(srv)
	a := newActivator(t, bundles.ActivatorOptions{PersistDir: persist})
	require.NoError(t, (&bundles.HTTPSource{URL: ts.URL, Activator: a}).Poll(context.Background()))
	require.FileExists(t, filepath.Join(persist, bundles.PersistedFile))
	url := ts.URL
	ts.Close()

	// A restart while the bundle server is gone.
	restarted := newActivator(t, bundles.ActivatorOptions{PersistDir: persist})
	s := &bundles.HTTPSource{URL: url, Interval: time.Hour, Timeout: time.Second, Activator: restarted}
	require.Error(t, s.Poll(context.Background()))
	runSource(t, s)
	require.Eventually(t, func() bool { return restarted.Current() != nil }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, "r1", restarted.Current().Revision())
}

func TestNewSource(t *testing.T) {
	assert.Equal(t, bundles.SourceOptions{URL: "https://b.example/x.tar.gz"}, bundles.SourceFor("https://b.example/x.tar.gz"))
	assert.Equal(t, bundles.SourceOptions{File: "/etc/mandate/bundle.tar.gz"}, bundles.SourceFor("/etc/mandate/bundle.tar.gz"))
	_, _, err := bundles.NewSource(bundles.SourceOptions{})
	require.ErrorContains(t, err, "no bundle source")
	_, _, err = bundles.NewSource(bundles.SourceOptions{File: "a", URL: "http://127.0.0.1/b"})
	require.ErrorContains(t, err, "not several")
	_, _, err = bundles.NewSource(bundles.SourceOptions{URL: "https://127.0.0.1/b", CAFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.ErrorContains(t, err, "CA")
	a, s, err := bundles.NewSource(bundles.SourceOptions{File: "x"})
	require.NoError(t, err)
	assert.NotNil(t, a)
	assert.IsType(t, &bundles.FileSource{}, s)
}

// TestStatusRecoversWithTheSource: a source that fails is in the status
// (step read) until it answers again; a rejection stays there until a
// bundle activates.
func TestStatusRecoversWithTheSource(t *testing.T) {
	ctx := context.Background()
	srv := &bundleServer{}
	srv.set(t, "r1")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newActivator(t, bundles.ActivatorOptions{})
	s := &bundles.HTTPSource{URL: ts.URL, Activator: a}
	require.NoError(t, s.Poll(ctx))

	srv.mu.Lock()
	srv.fail = true
	srv.mu.Unlock()
	require.Error(t, s.Poll(ctx))
	require.Error(t, s.Poll(ctx))
	st := a.Status()
	assert.Equal(t, bundles.StepRead, st.LastStep)
	assert.Contains(t, st.LastError, "503")
	assert.Equal(t, "r1", st.Revision)

	srv.mu.Lock()
	srv.fail = false
	srv.mu.Unlock()
	require.NoError(t, s.Poll(ctx), "304: unchanged")
	st = a.Status()
	assert.Empty(t, st.LastError, "the source answers again")
	assert.Empty(t, st.LastStep)

	// A rejected file, gone for a while, back unchanged: still rejected.
	dir := t.TempDir()
	path := filepath.Join(dir, "b.tar.gz")
	require.NoError(t, os.WriteFile(path, []byte("not a bundle"), 0o644))
	fs := &bundles.FileSource{Path: path, Activator: a}
	require.Error(t, fs.Poll(ctx))
	rejected := a.Status().LastError
	require.Contains(t, rejected, "rejected at read")
	require.NoError(t, os.Rename(path, path+".away"))
	require.Error(t, fs.Poll(ctx))
	assert.Contains(t, a.Status().LastError, "no such file")
	require.NoError(t, os.Rename(path+".away", path))
	require.NoError(t, fs.Poll(ctx))
	assert.Equal(t, rejected, a.Status().LastError)
	assert.Equal(t, "r1", a.Current().Revision())
}

// setFile serves the archive at path with an ETag of its own.
func (s *bundleServer) setFile(t *testing.T, path, etag string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = data, `"`+etag+`"`
}

// TestHTTPSourceSignedBundles: Mandate verifies what the downloader
// fetched: a bundle signed with key id prod and scope mandate activates
// with that key id and scope; signed under another key id, unsigned, or
// signed but with no key configured, it is rejected at verify and the last
// good revision keeps serving.
func TestHTTPSourceSignedBundles(t *testing.T) {
	ctx := context.Background()
	private, public := keyPair(t, "ecdsa")
	prod := signedFile(t, bundles.SignOptions{Key: private, Algorithm: "ES256", KeyID: "prod", Scope: "mandate"})
	srv := &bundleServer{}
	srv.setFile(t, prod, "signed")
	ts := httptest.NewServer(srv)
	defer ts.Close()

	a := newActivator(t, bundles.ActivatorOptions{Verify: &bundles.VerifyOptions{PublicKey: public, KeyID: "prod", Scope: "mandate"}, Require: true})
	src := &bundles.HTTPSource{URL: ts.URL + "/b.tar.gz", Activator: a}
	require.NoError(t, src.Poll(ctx))
	require.NotNil(t, a.Current())
	assert.Equal(t, "r1", a.Current().Revision())

	srv.set(t, "r2") // unsigned
	err := src.Poll(ctx)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, bundles.StepVerify, aerr.Step)
	assert.Equal(t, "r1", a.Current().Revision(), "the last good revision keeps serving")

	for _, tc := range []struct {
		name   string
		verify *bundles.VerifyOptions
		want   string
	}{
		{"another key id", &bundles.VerifyOptions{PublicKey: public, Scope: "mandate"}, `signed with key id "prod", verifying with key id "default"`},
		{"another scope", &bundles.VerifyOptions{PublicKey: public, KeyID: "prod", Scope: "staging"}, "scope"},
		{"no key", nil, "the bundle is signed: set bundle.verificationKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.setFile(t, prod, "signed")
			a := newActivator(t, bundles.ActivatorOptions{Verify: tc.verify})
			err := (&bundles.HTTPSource{URL: ts.URL + "/b.tar.gz", Activator: a}).Poll(ctx)
			var aerr *bundles.ActivationError
			require.ErrorAs(t, err, &aerr)
			assert.Equal(t, bundles.StepVerify, aerr.Step)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, a.Current())
			assert.Equal(t, bundles.StepVerify, a.Status().LastStep)
		})
	}
}

// TestHTTPSourceRefusedArchive: what the server sends is not a bundle:
// OPA's reader refuses it, the bundle is rejected at read (not a failure of
// the source: no backoff), and the last good revision keeps serving.
func TestHTTPSourceRefusedArchive(t *testing.T) {
	ctx := context.Background()
	srv := &bundleServer{}
	srv.set(t, "r1")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	a := newActivator(t, bundles.ActivatorOptions{})
	src := &bundles.HTTPSource{URL: ts.URL, Activator: a}
	require.NoError(t, src.Poll(ctx))

	srv.mu.Lock()
	srv.body, srv.etag = []byte("not a bundle"), `"garbage"`
	srv.mu.Unlock()
	err := src.Poll(ctx)
	var aerr *bundles.ActivationError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, bundles.StepRead, aerr.Step)
	assert.ErrorIs(t, err, bundles.ErrInvalidBundle)
	assert.Equal(t, "r1", a.Current().Revision())
	assert.Equal(t, bundles.StepRead, a.Status().LastStep)

	srv.set(t, "r2")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r2", a.Current().Revision())
	assert.Empty(t, a.Status().LastError)
}

// TestHTTPSourceServiceConfig: OPA's service configuration gives the
// client its credentials (here a bearer token file, re-read on every poll)
// and headers; settings that contradict each other or the URL are refused
// when the source is built.
func TestHTTPSourceServiceConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	var tenant atomic.Value
	bs := &bundleServer{token: "s3cret"}
	bs.set(t, "r1")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant.Store(r.Header.Get("X-Mandate-Cluster"))
		bs.ServeHTTP(w, r)
	}))
	defer ts.Close()
	service := []byte("credentials:\n  bearer:\n    token_path: " + tokenFile + "\nheaders:\n  X-Mandate-Cluster: eu-1\n")
	a, src, err := bundles.NewSource(bundles.SourceOptions{URL: ts.URL + "/b.tar.gz", Service: service})
	require.NoError(t, err)
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r1", a.Current().Revision())
	assert.Equal(t, "eu-1", tenant.Load())

	// A rotated token is read on the next poll.
	bs.mu.Lock()
	bs.token = "rotated"
	bs.mu.Unlock()
	require.ErrorContains(t, src.Poll(ctx), "401 Unauthorized")
	require.NoError(t, os.WriteFile(tokenFile, []byte("rotated"), 0o600))
	bs.set(t, "r2")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, "r2", a.Current().Revision())

	for _, tc := range []struct {
		name string
		opts bundles.SourceOptions
		want string
	}{
		{"token file and service credentials", bundles.SourceOptions{URL: ts.URL, Service: service, BearerTokenFile: tokenFile}, "both set"},
		{"url beside an http source", bundles.SourceOptions{URL: ts.URL, Service: []byte("url: https://elsewhere.example\n")}, "names its server itself"},
		{"two credentials", bundles.SourceOptions{URL: ts.URL, Service: []byte("credentials:\n  bearer: {token: a}\n  s3_signing: {environment_credentials: {}}\n")}, "one credential method"},
		{"OCI", bundles.SourceOptions{URL: ts.URL, Service: []byte("type: oci\n")}, `type "oci"`},
		{"not YAML", bundles.SourceOptions{URL: ts.URL, Service: []byte("credentials: [")}, "unable to read the service configuration"},
		{"S3 URL without a key", bundles.SourceOptions{URL: "s3://bucket"}, "s3://bucket/key"},
		{"client TLS without a certificate", bundles.SourceOptions{URL: ts.URL, Service: []byte("credentials:\n  client_tls: {private_key: k.pem}\n")}, "client certificate is needed"},
		{"missing CA", bundles.SourceOptions{URL: ts.URL, Service: []byte("tls: {ca_cert: " + filepath.Join(dir, "nope.pem") + "}\n")}, "nope.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := bundles.NewSource(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
