package bundles

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServiceConfig: where a URL source is fetched from, and with which
// credentials, as OPA's REST client is configured.
func TestServiceConfig(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-3")
	for _, tc := range []struct {
		name, ref, service, token, tokenFile, ca string
		want                                     map[string]any
		wantPath                                 string
	}{
		{name: "https with credentials in the URL", ref: "https://ci:pw@b.example:8443/bundles/m.tar.gz?token=t",
			want: map[string]any{"url": "https://ci:pw@b.example:8443"}, wantPath: "bundles/m.tar.gz?token=t"},
		{name: "bearer token file and CA", ref: "https://b.example/m.tar.gz", tokenFile: "/t", ca: "/ca.pem",
			want: map[string]any{"url": "https://b.example", "credentials": map[string]any{"bearer": map[string]any{"token_path": "/t"}},
				"tls": map[string]any{"ca_cert": "/ca.pem"}}, wantPath: "m.tar.gz"},
		{name: "S3 on AWS", ref: "s3://policies/prod/mandate.tar.gz",
			want: map[string]any{"url": "https://policies.s3.eu-west-3.amazonaws.com",
				"credentials": map[string]any{"s3_signing": map[string]any{"environment_credentials": map[string]any{}}}},
			wantPath: "prod/mandate.tar.gz"},
		{name: "S3-compatible endpoint with its credentials", ref: "s3://policies/mandate.tar.gz",
			service: "url: https://minio.example:9000\ncredentials:\n  s3_signing:\n    web_identity_credentials: {aws_region: us-east-1}\n",
			want: map[string]any{"url": "https://minio.example:9000",
				"credentials": map[string]any{"s3_signing": map[string]any{"web_identity_credentials": map[string]any{"aws_region": "us-east-1"}}}},
			wantPath: "policies/mandate.tar.gz"},
		{name: "OCI registry", ref: "oci://ghcr.io/acme/policies:prod",
			want: map[string]any{"url": "https://ghcr.io", "type": "oci"}, wantPath: "ghcr.io/acme/policies:prod"},
		{name: "OCI registry with a token", ref: "oci://ghcr.io/acme/policies@sha256:0123", tokenFile: "/t",
			want:     map[string]any{"url": "https://ghcr.io", "type": "oci", "credentials": map[string]any{"bearer": map[string]any{"token_path": "/t"}}},
			wantPath: "ghcr.io/acme/policies@sha256:0123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, path, err := serviceConfig(tc.ref, []byte(tc.service), tc.token, tc.tokenFile, tc.ca)
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(cfg, &got))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantPath, path)
		})
	}
}
