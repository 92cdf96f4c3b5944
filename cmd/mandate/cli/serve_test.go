package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/bundles"
)

// writePublicKey writes a fresh ECDSA public key (PEM, PKIX).
func writePublicKey(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unreachableKubeconfig writes a kubeconfig whose API server is never
// reached: the tests fail before serve would connect.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func TestServeSetupErrors(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	dir := t.TempDir()
	writeConfig := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	unknownKey := writeConfig("unknown.yaml", "webhook:\n  prot: 9443\n")
	wrongType := writeConfig("type.yaml", "webhook:\n  port: abc\n")
	noCerts := t.TempDir()
	goodBundle := filepath.Join(dir, "good.tar.gz")
	b, err := bundles.Build(context.Background(), "../../../policies", bundles.BuildOptions{Revision: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := bundles.WriteFile(goodBundle, b); err != nil {
		t.Fatal(err)
	}
	publicKey := writePublicKey(t)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "unknown key in --config", args: []string{"serve", "--kubeconfig", kubeconfig, "--config", unknownKey}, wantErr: "webhook.prot: unknown key"},
		{name: "wrong type in --config", args: []string{"serve", "--kubeconfig", kubeconfig, "--config", wrongType}, wantErr: `webhook.port: "abc" is not an integer`},
		{name: "missing --config file", args: []string{"serve", "--config", filepath.Join(dir, "nope.yaml")}, wantErr: "unable to read the configuration file"},
		{name: "missing TLS files", args: []string{"serve", "--kubeconfig", kubeconfig, "--cert-dir", noCerts}, wantErr: "webhook.certDir: " + filepath.Join(noCerts, "tls.crt") + " not found"},
		{name: "MANDATE_WEBHOOK_PORT=0", args: []string{"serve", "--kubeconfig", kubeconfig}, env: map[string]string{"MANDATE_WEBHOOK_PORT": "0"}, wantErr: "webhook.port: 0 is not a port (1-65535)"},
		{name: "--port out of range", args: []string{"serve", "--kubeconfig", kubeconfig, "--port", "70000"}, wantErr: "webhook.port: 70000 is not a port"},
		{name: "missing kubeconfig", args: []string{"serve", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, wantErr: "unable to load kubeconfig"},
		{name: "missing policy directory", args: []string{"serve", "--kubeconfig", kubeconfig, "--policies", filepath.Join(t.TempDir(), "nope")}, wantErr: "nope"},
		{name: "unknown logLevel", args: []string{"serve", "--kubeconfig", kubeconfig, "--log-level", "verbose"}, wantErr: `logLevel: "verbose" is not a level (debug, info or error)`},
		{name: "signature required without a key", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", goodBundle, "--bundle-require-signature"},
			wantErr: "bundle.requireSignature: is true but bundle.verificationKey is not set"},
		// Fail fast: a bundle source that cannot be read at startup, with
		// no persisted last good bundle, stops serve at once.
		{name: "unreachable bundle URL", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", "http://127.0.0.1:1/b.tar.gz"},
			wantErr: "bundle.source: unable to fetch bundle http://127.0.0.1:1/b.tar.gz"},
		{name: "missing bundle file", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", filepath.Join(dir, "nope.tar.gz")},
			wantErr: "bundle.source: unable to read bundle " + `"` + filepath.Join(dir, "nope.tar.gz")},
		{name: "rejected bundle", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", writeConfig("garbage.tar.gz", "not a bundle")},
			wantErr: "bundle.source: bundle " + filepath.Join(dir, "garbage.tar.gz") + " rejected at read"},
		{name: "unsigned bundle, key set", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", goodBundle, "--bundle-verification-key", publicKey},
			wantErr: "bundle.source: bundle " + goodBundle + " rejected at verify"},
		{name: "unreachable shadow bundle", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", goodBundle, "--shadow-bundle", "http://127.0.0.1:1/c.tar.gz"},
			wantErr: "bundle.shadow.source: unable to fetch bundle http://127.0.0.1:1/c.tar.gz"},
		{name: "missing bundle CA file", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", "https://127.0.0.1:1/b.tar.gz", "--bundle-ca-file", filepath.Join(dir, "nope.pem")},
			wantErr: "bundle.caFile: open " + filepath.Join(dir, "nope.pem") + ": no such file or directory"},
		{name: "missing bundle token file", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", "https://127.0.0.1:1/b.tar.gz"}, env: map[string]string{"MANDATE_BUNDLE_BEARER_TOKEN_FILE": filepath.Join(dir, "nope.token")},
			wantErr: "bundle.bearerTokenFile: open " + filepath.Join(dir, "nope.token") + ": no such file or directory"},
		{name: "bundle CA with a file source", args: []string{"serve", "--kubeconfig", kubeconfig, "--bundle", goodBundle, "--bundle-ca-file", publicKey},
			wantErr: "bundle.caFile: is set but neither bundle.source nor bundle.shadow.source is an http(s) URL"},
		{name: "unreachable shadow beside the policies", args: []string{"serve", "--kubeconfig", kubeconfig, "--shadow-bundle", "http://127.0.0.1:1/c.tar.gz"},
			wantErr: "bundle.shadow.source: unable to fetch bundle http://127.0.0.1:1/c.tar.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			began := time.Now()
			code, _, errText := run(t, tc.args...)
			if took := time.Since(began); took > 10*time.Second {
				t.Errorf("took %v to fail; want it to fail fast", took)
			}
			if code != 1 || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("exit %d, error %q; want exit 1 and an error containing %q", code, errText, tc.wantErr)
			}
		})
	}
}

// TestServeBundleHTTPSettings checks that --bundle-ca-file,
// --bundle-bearer-token-file and --bundle-service-config reach the URL
// source and the shadow: a TLS
// bundle server answering 403 to everything records the token it was sent;
// serve fails fast with the 403 (TLS verified with the CA), or with a
// certificate error without the CA.
func TestServeBundleHTTPSettings(t *testing.T) {
	var mu sync.Mutex
	var gotAuth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := unreachableKubeconfig(t)
	active, shadow := srv.URL+"/b.tar.gz", srv.URL+"/c.tar.gz"
	// OPA's service configuration: the endpoint of an s3:// source, its
	// CA and credentials.
	service := filepath.Join(dir, "service.yaml")
	if err := os.WriteFile(service, []byte("url: "+srv.URL+"\ntls:\n  ca_cert: "+caFile+"\ncredentials:\n  bearer:\n    token_path: "+tokenFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantErr  string
		wantAuth string
	}{
		{name: "source with CA and token", args: []string{"--bundle", active, "--bundle-ca-file", caFile, "--bundle-bearer-token-file", tokenFile},
			wantErr: "bundle.source: unable to fetch bundle " + active + ": 403 Forbidden", wantAuth: "Bearer s3cret"},
		{name: "shadow with CA and token", args: []string{"--shadow-bundle", shadow, "--bundle-ca-file", caFile, "--bundle-bearer-token-file", tokenFile},
			wantErr: "bundle.shadow.source: unable to fetch bundle " + shadow + ": 403 Forbidden", wantAuth: "Bearer s3cret"},
		{name: "S3 source with a service configuration", args: []string{"--bundle", "s3://policies/b.tar.gz", "--bundle-service-config", service},
			wantErr: "bundle.source: unable to fetch bundle s3://policies/b.tar.gz: 403 Forbidden", wantAuth: "Bearer s3cret"},
		{name: "source without the CA", args: []string{"--bundle", active},
			wantErr: "bundle.source: unable to fetch bundle " + active + ": Get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			gotAuth = nil
			mu.Unlock()
			code, _, errText := run(t, append([]string{"serve", "--kubeconfig", kubeconfig}, tc.args...)...)
			if code != 1 || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("exit %d, error %q; want exit 1 and an error containing %q", code, errText, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.wantAuth == "" {
				if len(gotAuth) != 0 {
					t.Errorf("the server answered %d requests; want none (TLS should fail without the CA)", len(gotAuth))
				}
				if !strings.Contains(errText, "certificate") {
					t.Errorf("error %q; want a certificate error", errText)
				}
				return
			}
			if len(gotAuth) == 0 || gotAuth[0] != tc.wantAuth {
				t.Errorf("Authorization headers %q; want %q", gotAuth, tc.wantAuth)
			}
		})
	}
}
