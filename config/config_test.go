package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/config"
)

func TestDefaultIsValid(t *testing.T) {
	if err := config.Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	certs := t.TempDir()
	if err := os.WriteFile(filepath.Join(certs, "tls.crt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*config.Serve)
		wantErr []string
	}{
		{"port too large", func(s *config.Serve) { s.Webhook.Port = 70000 }, []string{"webhook.port: 70000 is not a port (1-65535)"}},
		{"port zero", func(s *config.Serve) { s.Webhook.Port = 0 }, []string{"webhook.port: 0 is not a port"}},
		{"host with port", func(s *config.Serve) { s.Webhook.Host = "localhost:9443" }, []string{"webhook.host:"}},
		{"cert dir missing", func(s *config.Serve) { s.Webhook.CertDir = filepath.Join(certs, "nope") }, []string{"webhook.certDir: " + filepath.Join(certs, "nope") + " not found"}},
		{"tls.key missing", func(s *config.Serve) { s.Webhook.CertDir = certs }, []string{"webhook.certDir: " + filepath.Join(certs, "tls.key") + " not found"}},
		{"client CA missing", func(s *config.Serve) { s.Webhook.ClientCAFile = filepath.Join(certs, "nope.crt") },
			[]string{"webhook.clientCAFile: unable to read " + filepath.Join(certs, "nope.crt")}},
		{"client CA not PEM", func(s *config.Serve) { s.Webhook.ClientCAFile = filepath.Join(certs, "tls.crt") },
			[]string{"webhook.clientCAFile: " + filepath.Join(certs, "tls.crt") + " holds no PEM certificate"}},
		{"client CN without a CA", func(s *config.Serve) { s.Webhook.ClientCN = "kube-apiserver" },
			[]string{`webhook.clientCN: "kube-apiserver" needs webhook.clientCAFile`}},
		{"health addr", func(s *config.Serve) { s.HealthAddr = "8081" }, []string{"healthAddr:", "host:port"}},
		{"metrics addr port", func(s *config.Serve) { s.MetricsAddr = ":99999" }, []string{"metricsAddr:", "0-65535"}},
		{"same addresses", func(s *config.Serve) { s.MetricsAddr = s.HealthAddr }, []string{"metricsAddr:", "also healthAddr"}},
		{"pprof addr", func(s *config.Serve) { s.PprofAddr = "6060" }, []string{"pprofAddr:", "host:port"}},
		{"pprof on the metrics address", func(s *config.Serve) { s.PprofAddr = s.MetricsAddr }, []string{"pprofAddr:", "also healthAddr or metricsAddr"}},
		{"gc percent too low", func(s *config.Serve) { s.GCPercent = 50 }, []string{"gcPercent: 50 is out of range (100-1000)"}},
		{"policies missing", func(s *config.Serve) { s.Policies = filepath.Join(certs, "nope") }, []string{"policies: ", "not found"}},
		{"policies a file", func(s *config.Serve) { s.Policies = filepath.Join(certs, "tls.crt") }, []string{"policies: ", "not a directory"}},
		{"no admin groups", func(s *config.Serve) { s.AdminGroups = nil }, []string{"adminGroups: is empty"}},
		{"empty admin group", func(s *config.Serve) { s.AdminGroups = []string{"a", " "} }, []string{"adminGroups: entry 1 is empty"}},
		{"namespace", func(s *config.Serve) { s.Namespace = "Mandate_System" }, []string{"namespace: \"Mandate_System\" is not a namespace name"}},
		{"timeout zero", func(s *config.Serve) { s.Evaluation.Timeout = 0 }, []string{"evaluation.timeout: 0s is out of range (1ms-30s)"}},
		{"timeout too long", func(s *config.Serve) { s.Evaluation.Timeout = time.Minute }, []string{"evaluation.timeout: 1m0s is out of range"}},
		{"client qps zero", func(s *config.Serve) { s.KubeClient.QPS = 0 }, []string{"kubeClient.qps: 0 is out of range (1-10000)"}},
		{"client burst below qps", func(s *config.Serve) { s.KubeClient.Burst = 100 }, []string{"kubeClient.burst: 100 is out of range (kubeClient.qps 200-10000)"}},
		{"enforcement override off", func(s *config.Serve) { s.Evaluation.EnforcementOverride = "off" },
			[]string{`evaluation.enforcementOverride: "off" is not an override ("", "dryrun" or "warn")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := config.Default()
			tc.edit(&s)
			err := s.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// load resolves a configuration the way `mandate serve` does: flags > env >
// file > defaults.
func load(t *testing.T, file string, env map[string]string, args ...string) (config.Serve, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	v := viper.New()
	if err := config.Bind(v); err != nil {
		t.Fatal(err)
	}
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.Int("port", 0, "")
	f.String("health-addr", "", "")
	f.StringSlice("admin-groups", nil, "")
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	for flag, key := range map[string]string{"port": "webhook.port", "health-addr": "healthAddr", "admin-groups": "adminGroups"} {
		if err := v.BindPFlag(key, f.Lookup(flag)); err != nil {
			t.Fatal(err)
		}
	}
	if file != "" {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := config.ReadFile(v, path); err != nil {
			t.Fatal(err)
		}
	}
	return config.Load(v)
}

func TestLoadPrecedence(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	const file = `
webhook:
  port: 1001
  host: 127.0.0.1
healthAddr: ":1002"
metricsAddr: ":1003"
adminGroups: [file-admins]
namespace: from-file
evaluation:
  timeout: 2s
`
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want func(*config.Serve)
	}{
		{name: "defaults", want: func(*config.Serve) {}},
		{name: "file over defaults", file: file, want: func(s *config.Serve) {
			s.Webhook.Port, s.Webhook.Host, s.HealthAddr, s.MetricsAddr = 1001, "127.0.0.1", ":1002", ":1003"
			s.AdminGroups, s.Namespace, s.Evaluation.Timeout = []string{"file-admins"}, "from-file", 2*time.Second
		}},
		{name: "env over file", file: file,
			env: map[string]string{"MANDATE_WEBHOOK_PORT": "2001", "MANDATE_ADMIN_GROUPS": "a,b", "MANDATE_EVALUATION_TIMEOUT": "3s", "MANDATE_HEALTH_ADDR": ":2002"},
			want: func(s *config.Serve) {
				s.Webhook.Port, s.Webhook.Host, s.HealthAddr, s.MetricsAddr = 2001, "127.0.0.1", ":2002", ":1003"
				s.AdminGroups, s.Namespace, s.Evaluation.Timeout = []string{"a", "b"}, "from-file", 3*time.Second
			}},
		{name: "flags over env", file: file,
			env:  map[string]string{"MANDATE_WEBHOOK_PORT": "2001", "MANDATE_ADMIN_GROUPS": "a,b", "MANDATE_HEALTH_ADDR": ":2002"},
			args: []string{"--port", "3001", "--admin-groups", "x,y", "--health-addr", ":3002"},
			want: func(s *config.Serve) {
				s.Webhook.Port, s.Webhook.Host, s.HealthAddr, s.MetricsAddr = 3001, "127.0.0.1", ":3002", ":1003"
				s.AdminGroups, s.Namespace, s.Evaluation.Timeout = []string{"x", "y"}, "from-file", 2*time.Second
			}},
		{name: "POD_NAMESPACE", env: map[string]string{"POD_NAMESPACE": "mandate-system"}, want: func(s *config.Serve) { s.Namespace = "mandate-system" }},
		{name: "MANDATE_NAMESPACE over POD_NAMESPACE", env: map[string]string{"POD_NAMESPACE": "p", "MANDATE_NAMESPACE": "m"}, want: func(s *config.Serve) { s.Namespace = "m" }},
		{name: "shadow bundle from env", env: map[string]string{"MANDATE_BUNDLE_SHADOW_SOURCE": "https://b.example/candidate.tar.gz"},
			want: func(s *config.Serve) { s.Bundle.Shadow.Source = "https://b.example/candidate.tar.gz" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := config.Default()
			tc.want(&want)
			got, err := load(t, tc.file, tc.env, tc.args...)
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			assert.Equal(t, want, got, "Load()")
		})
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	for _, tc := range []struct {
		name    string
		file    string
		env     map[string]string
		wantErr []string
	}{
		{name: "unknown key", file: "webhook:\n  prot: 1\n", wantErr: []string{"webhook.prot: unknown key", "webhook.port"}},
		{name: "unknown top-level key", file: "polices: /x\n", wantErr: []string{"polices: unknown key"}},
		{name: "scalar for a section", file: "webhook: 1\n", wantErr: []string{"webhook: is a section", "webhook.certDir"}},
		{name: "port not an integer", file: "webhook:\n  port: abc\n", wantErr: []string{`webhook.port: "abc" is not an integer`}},
		{name: "address not a string", file: "healthAddr: [a]\n", wantErr: []string{"healthAddr: [a] is not a string"}},
		{name: "groups not strings", file: "adminGroups: [a, {b: c}]\n", wantErr: []string{"adminGroups:", "is not a list of strings"}},
		{name: "timeout not a duration", file: "evaluation:\n  timeout: soon\n", wantErr: []string{`evaluation.timeout: "soon" is not a duration`}},
		{name: "env port not an integer", env: map[string]string{"MANDATE_WEBHOOK_PORT": "x"}, wantErr: []string{`webhook.port: "x" is not an integer`}},
		{name: "env port zero", env: map[string]string{"MANDATE_WEBHOOK_PORT": "0"}, wantErr: []string{"webhook.port: 0 is not a port"}},
		{name: "file port out of range", file: "webhook:\n  port: 70000\n", wantErr: []string{"webhook.port: 70000 is not a port (1-65535)"}},
		{name: "requireSignature not a boolean", file: "bundle:\n  source: b.tar.gz\n  requireSignature: sure\n", wantErr: []string{`bundle.requireSignature: "sure" is not a boolean`}},
		{name: "env requireSignature without a key", env: map[string]string{"MANDATE_BUNDLE_SOURCE": "b.tar.gz", "MANDATE_BUNDLE_REQUIRE_SIGNATURE": "true"},
			wantErr: []string{"bundle.requireSignature: is true but bundle.verificationKey is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.file, tc.env)
			if err == nil {
				t.Fatal("Load() = nil error, want one")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load() error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestKeysCoverServe(t *testing.T) {
	v := viper.New()
	if err := config.Bind(v); err != nil {
		t.Fatal(err)
	}
	if got, want := len(v.AllKeys()), len(config.Keys); got != want {
		t.Errorf("viper knows %d keys, config.Keys lists %d", got, want)
	}
}

func TestBundleValidation(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("-----BEGIN PUBLIC KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		bundle  config.Bundle
		policy  string
		wantKey string
	}{
		{"file source", config.Bundle{Source: "bundle.tar.gz", Interval: time.Minute}, "", ""},
		{"URL source", config.Bundle{Source: "https://bundles.example/mandate.tar.gz", Interval: time.Minute}, "", ""},
		{"URL without host", config.Bundle{Source: "https://", Interval: time.Minute}, "", "bundle.source"},
		{"S3 source", config.Bundle{Source: "s3://bucket/b.tar.gz", Interval: time.Minute}, "", ""},
		{"S3 source without a key", config.Bundle{Source: "s3://bucket", Interval: time.Minute}, "", "bundle.source"},
		{"OCI source", config.Bundle{Source: "oci://ghcr.io/acme/policies:prod", Interval: time.Minute}, "", ""},
		{"OCI source without a repository", config.Bundle{Source: "oci://ghcr.io", Interval: time.Minute}, "", "bundle.source"},
		{"other scheme", config.Bundle{Source: "gs://bucket/b.tar.gz", Interval: time.Minute}, "", "bundle.source"},
		{"both policy sources", config.Bundle{Source: "b.tar.gz", Interval: time.Minute}, dir, "bundle.source"},
		{"key without source", config.Bundle{VerificationKey: "k.pem", Interval: time.Minute}, "", "bundle.source"},
		{"missing key file", config.Bundle{Source: "b.tar.gz", VerificationKey: "nope.pem", Interval: time.Minute}, "", "bundle.verificationKey"},
		{"persist dir not a directory", config.Bundle{Source: "b.tar.gz", PersistDir: "nope", Interval: time.Minute}, "", "bundle.persistDir"},
		{"interval too short", config.Bundle{Source: "b.tar.gz", Interval: time.Millisecond}, "", "bundle.interval"},
		{"signature required without a key", config.Bundle{Source: "b.tar.gz", RequireSignature: true, Interval: time.Minute}, "", "bundle.requireSignature"},
		{"signature required with a key", config.Bundle{Source: "b.tar.gz", RequireSignature: true, VerificationKey: key, Interval: time.Minute}, "", ""},
		{"key id and scope with a key", config.Bundle{Source: "b.tar.gz", VerificationKey: key, VerificationKeyID: "prod", Scope: "mandate", Interval: time.Minute}, "", ""},
		{"key id without a key", config.Bundle{Source: "b.tar.gz", VerificationKeyID: "prod", Interval: time.Minute}, "", "bundle.verificationKeyId"},
		{"scope without a key", config.Bundle{Source: "b.tar.gz", Scope: "mandate", Interval: time.Minute}, "", "bundle.scope"},
		{"shadow beside a bundle", config.Bundle{Source: "b.tar.gz", Shadow: config.ShadowBundle{Source: "https://b.example/c.tar.gz"}, Interval: time.Minute}, "", ""},
		{"shadow beside the policies", config.Bundle{Shadow: config.ShadowBundle{Source: "candidate/"}, VerificationKey: key, Interval: time.Minute}, dir, ""},
		{"shadow of another scheme", config.Bundle{Source: "b.tar.gz", Shadow: config.ShadowBundle{Source: "ftp://b/c.tar.gz"}, Interval: time.Minute}, "", "bundle.shadow.source"},
		{"service config of an S3 source", config.Bundle{Source: "s3://b/b.tar.gz", ServiceConfig: key, Interval: time.Minute}, "", ""},
		{"missing service config", config.Bundle{Source: "s3://b/b.tar.gz", ServiceConfig: filepath.Join(dir, "nope"), Interval: time.Minute}, "", "bundle.serviceConfig"},
		{"service config of a file source", config.Bundle{Source: "b.tar.gz", ServiceConfig: key, Interval: time.Minute}, "", "bundle.serviceConfig"},
		{"shadow URL without host", config.Bundle{Shadow: config.ShadowBundle{Source: "http://"}, Interval: time.Minute}, "", "bundle.shadow.source"},
		{"token and CA of a URL source", config.Bundle{Source: "https://b.example/b.tar.gz", BearerTokenFile: key, CAFile: key, Interval: time.Minute}, "", ""},
		{"token and CA of a URL shadow", config.Bundle{Source: "b.tar.gz", Shadow: config.ShadowBundle{Source: "https://b.example/c.tar.gz"}, BearerTokenFile: key, CAFile: key, Interval: time.Minute}, "", ""},
		{"missing token file", config.Bundle{Source: "https://b.example/b.tar.gz", BearerTokenFile: filepath.Join(dir, "nope"), Interval: time.Minute}, "", "bundle.bearerTokenFile"},
		{"token file a directory", config.Bundle{Source: "https://b.example/b.tar.gz", BearerTokenFile: dir, Interval: time.Minute}, "", "bundle.bearerTokenFile"},
		{"missing CA file", config.Bundle{Source: "https://b.example/b.tar.gz", CAFile: filepath.Join(dir, "nope"), Interval: time.Minute}, "", "bundle.caFile"},
		{"CA of a file source", config.Bundle{Source: "b.tar.gz", CAFile: key, Interval: time.Minute}, "", "bundle.caFile"},
		{"token without any source", config.Bundle{BearerTokenFile: key, Interval: time.Minute}, "", "bundle.bearerTokenFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			c.Bundle, c.Policies = tc.bundle, tc.policy
			err := c.Validate()
			switch {
			case tc.wantKey == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantKey != "" && (err == nil || !strings.Contains(err.Error(), tc.wantKey+":")):
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.wantKey)
			}
		})
	}
}
