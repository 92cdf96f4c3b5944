package bundles_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

const (
	s3AccessKey = "AKIAMANDATETEST"
	s3SecretKey = "mandate-s3-secret-key"
	s3Region    = "eu-central-1"
	s3Bucket    = "policies"
	s3Key       = "mandate/bundle.tar.gz"
)

// s3Server is an S3-compatible object store (gofakes3, in memory) behind a
// check of AWS Signature Version 4: a request whose signature does not
// verify with s3SecretKey is refused with 403, as S3 refuses it.
type s3Server struct {
	backend *s3mem.Backend
	srv     *httptest.Server

	mu       sync.Mutex
	statuses []int
	refused  []string
}

func newS3Server(t *testing.T) *s3Server {
	t.Helper()
	s := &s3Server{backend: s3mem.New()}
	require.NoError(t, s.backend.CreateBucket(s3Bucket))
	store := gofakes3.New(s.backend).Server()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := verifySigV4(r, s3AccessKey, s3SecretKey, s3Region); err != nil {
			s.mu.Lock()
			s.refused = append(s.refused, err.Error())
			s.mu.Unlock()
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		store.ServeHTTP(rec, r)
		s.mu.Lock()
		s.statuses = append(s.statuses, rec.status)
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// put stores a bundle of revision as the object s3Bucket/s3Key.
func (s *s3Server) put(t *testing.T, revision string) {
	t.Helper()
	data, err := os.ReadFile(writeFile(t, t.TempDir(), "b.tar.gz", built(t, revision)))
	require.NoError(t, err)
	_, err = s.backend.PutObject(s3Bucket, s3Key, map[string]string{"Content-Type": "application/gzip"}, bytes.NewReader(data), int64(len(data)), nil)
	require.NoError(t, err)
}

// answered returns the statuses of the requests that passed the signature
// check since the last call.
func (s *s3Server) answered() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.statuses
	s.statuses = nil
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// verifySigV4 checks a request's AWS Signature Version 4 (header form):
// the credential scope names the access key, region and service s3, and
// the signature over the canonical request, recomputed with the secret
// key, matches.
func verifySigV4(r *http.Request, accessKey, secretKey, region string) error {
	params, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return errors.New("no AWS4-HMAC-SHA256 Authorization header")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != accessKey || scope[2] != region || scope[3] != "s3" || scope[4] != "aws4_request" {
		return fmt.Errorf("credential scope %q: want %s/<date>/%s/s3/aws4_request", fields["Credential"], accessKey, region)
	}
	date := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(date, scope[1]) {
		return fmt.Errorf("x-amz-date %q is not of the scope's day %s", date, scope[1])
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if sum := sha256.Sum256(body); payload != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("x-amz-content-sha256 %q is not the body's", payload)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, must := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !contains(signed, must) {
			return fmt.Errorf("%s is not signed (SignedHeaders=%s)", must, fields["SignedHeaders"])
		}
	}
	var canon strings.Builder
	fmt.Fprintf(&canon, "%s\n%s\n%s\n", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
	for _, h := range signed {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&canon, "%s:%s\n", h, v)
	}
	fmt.Fprintf(&canon, "\n%s\n%s", fields["SignedHeaders"], payload)
	canonSum := sha256.Sum256([]byte(canon.String()))
	toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(canonSum[:])
	key := []byte("AWS4" + secretKey)
	for _, part := range scope[1:] {
		key = hmacSHA256(key, part)
	}
	if want := hex.EncodeToString(hmacSHA256(key, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return errors.New("the signature does not verify")
	}
	return nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// s3Service is the OPA service configuration of the S3 endpoint: the
// form docs/bundles.md shows.
func s3Service(endpoint string) []byte {
	return []byte(fmt.Sprintf(`url: %s
credentials:
  s3_signing:
    environment_credentials: {}
`, endpoint))
}

// TestS3SourceETagAndNewRevision: a bundle kept in an S3-compatible store
// activates through OPA's downloader with SigV4-signed requests; the next
// poll is answered 304 (the ETag was sent back) and activates nothing; a
// new object revision activates; a wrong secret key is refused and the
// last good revision keeps serving.
func TestS3SourceETagAndNewRevision(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", s3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3SecretKey)
	t.Setenv("AWS_REGION", s3Region)
	s3 := newS3Server(t)
	s3.put(t, "r1")
	ctx := context.Background()
	const ref = "s3://" + s3Bucket + "/" + s3Key

	a, src, err := bundles.NewSource(bundles.SourceOptions{URL: ref, Service: s3Service(s3.srv.URL), Activator: bundles.ActivatorOptions{PersistDir: t.TempDir()}})
	require.NoError(t, err)
	require.NoError(t, src.Poll(ctx))
	require.NotNil(t, a.Current())
	assert.Equal(t, "r1", a.Current().Revision())
	assert.Equal(t, []int{http.StatusOK}, s3.answered())
	first := a.Status()
	assert.Equal(t, ref, first.Source)

	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, []int{http.StatusNotModified}, s3.answered(), "the second poll sends the ETag back")
	assert.Equal(t, first, a.Status(), "an unchanged object is not activated again")

	s3.put(t, "r2")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, []int{http.StatusOK}, s3.answered())
	assert.Equal(t, "r2", a.Current().Revision(), "the new object revision activates")
	require.NoError(t, src.Poll(ctx))
	assert.Equal(t, []int{http.StatusNotModified}, s3.answered())

	s3.mu.Lock()
	refusedBefore := len(s3.refused)
	s3.mu.Unlock()
	assert.Zero(t, refusedBefore, "every request so far carried a valid signature")

	// The same store with the wrong secret: S3 refuses, the source fails
	// at read, the last good revision keeps serving.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	wrong := &bundles.HTTPSource{URL: ref, Service: s3Service(s3.srv.URL), Activator: a}
	err = wrong.Poll(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unable to fetch bundle "+ref+": 403 Forbidden")
	assert.NotContains(t, err.Error(), "not-the-secret")
	s3.mu.Lock()
	assert.Equal(t, []string{"the signature does not verify"}, s3.refused)
	s3.mu.Unlock()
	assert.Equal(t, "r2", a.Current().Revision())
	assert.Equal(t, bundles.StepRead, a.Status().LastStep)
}
