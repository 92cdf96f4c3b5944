package bundles_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://bundles.example/b.tar.gz", "https://bundles.example/b.tar.gz"},
		{"https://ci:hunter2@bundles.example/b.tar.gz", "https://ci:REDACTED@bundles.example/b.tar.gz"},
		{"https://ci@bundles.example/b.tar.gz", "https://ci@bundles.example/b.tar.gz"},
		{"https://bundles.example/b.tar.gz?token=s3cret&X-Amz-Signature=abc", "https://bundles.example/b.tar.gz?X-Amz-Signature=REDACTED&token=REDACTED"},
		{"/etc/mandate/bundle.tar.gz", "/etc/mandate/bundle.tar.gz"},
		{"https://ci:pa%zz@host/x", "https://REDACTED"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, bundles.RedactURL(tc.in))
		})
	}
}

// TestHTTPSourceNeverShowsCredentials: neither a failed poll's error nor the
// status (served on /bundle/status) carries the URL's password or token,
// whether the server fails, cannot be reached, or serves a bundle.
func TestHTTPSourceNeverShowsCredentials(t *testing.T) {
	const password, token = "hunter2-pw", "s3cret-token"
	srv := &bundleServer{}
	srv.set(t, "r1")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pw, ok := r.BasicAuth(); !ok || user != "ci" || pw != password || r.URL.Query().Get("token") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	withCredentials := func(base string) string {
		return strings.Replace(base, "http://", "http://ci:"+password+"@", 1) + "/bundle.tar.gz?token=" + token
	}
	secret := func(t *testing.T, texts ...string) {
		t.Helper()
		for _, s := range texts {
			assert.NotContains(t, s, password)
			assert.NotContains(t, s, token)
		}
	}

	for _, tc := range []struct {
		name    string
		url     string
		wantErr bool
	}{
		{name: "served", url: withCredentials(ts.URL)},
		{name: "refused by the server", url: strings.Replace(withCredentials(ts.URL), password, "wrong", 1), wantErr: true},
		{name: "unreachable", url: withCredentials("http://127.0.0.1:1"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newActivator(t, bundles.ActivatorOptions{})
			err := (&bundles.HTTPSource{URL: tc.url, Activator: a}).Poll(context.Background())
			st := a.Status()
			if tc.wantErr {
				require.Error(t, err)
				secret(t, err.Error(), st.LastError, st.Source)
				assert.Contains(t, st.Source, "REDACTED")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "r1", st.Revision)
			secret(t, st.Source, st.LastError)
		})
	}
}
