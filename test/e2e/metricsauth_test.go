package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestMetricsNeedAuthentication: with metricsAuth, /metrics and the bundle
// status are served over HTTPS only to a client the API server
// authenticates and authorises: no token is refused (401), a service
// account without the right is forbidden (403), and one granted get on
// the paths reads both.
func TestMetricsNeedAuthentication(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startWith(t, startOptions{config: func(c *config.Serve) { c.MetricsAddr, c.MetricsAuth = addr, true }})
	ctx := context.Background()
	c := s.env.Client
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // a self-signed serving certificate
	get := func(path, token string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	envtest.WaitFor(t, 30*time.Second, "the metrics server over HTTPS", func() bool { return get("/metrics", "") != 0 })

	for _, path := range []string{"/metrics", bundles.StatusPath} {
		if got := get(path, ""); got != http.StatusUnauthorized {
			t.Errorf("GET %s without a token = %d, want 401", path, got)
		}
	}
	// Two service accounts: the authorizer caches a denial for 30s, so the
	// one refused is not the one granted afterwards.
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if err := c.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatalf("request a token for %s: %v", name, err)
		}
		return tr.Status.Token
	}
	if got := get("/metrics", token("outsider")); got != http.StatusForbidden {
		t.Errorf("GET /metrics as a service account without the right = %d, want 403", got)
	}
	scraper := token("scraper")

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mandate-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", bundles.StatusPath}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scraper-reads-mandate-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "scraper"}}}
	if err := c.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/metrics", bundles.StatusPath} {
		envtest.WaitFor(t, 30*time.Second, "GET "+path+" as the granted service account to answer 200", func() bool {
			return get(path, scraper) == http.StatusOK
		})
	}
}
