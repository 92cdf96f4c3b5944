package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/mandate-dev/mandate/config"
)

func selfSigned(t *testing.T) config.Serve {
	s := config.Default()
	s.Certs.Mode = config.CertsSelfSigned
	s.Namespace = "mandate-system"
	s.Webhook.CertDir = t.TempDir() // empty: selfSigned writes the files
	return s
}

func TestCertsSelfSignedValid(t *testing.T) {
	if err := selfSigned(t).Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}

func TestCertsValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*config.Serve)
		wantErr []string
	}{
		{"unknown mode", func(s *config.Serve) { s.Certs.Mode = "auto" }, []string{`certs.mode: "auto" is not a mode`}},
		{"no namespace", func(s *config.Serve) { s.Namespace = "" }, []string{"namespace: is empty: certs.mode selfSigned"}},
		{"no cert dir", func(s *config.Serve) { s.Webhook.CertDir = "" }, []string{"webhook.certDir: is empty: certs.mode selfSigned"}},
		{"secret name", func(s *config.Serve) { s.Certs.SecretName = "Bad_Name" }, []string{`certs.secretName: "Bad_Name" is not an object name`}},
		{"service name", func(s *config.Serve) { s.Certs.ServiceName = "a.b" }, []string{`certs.serviceName: "a.b" is not a Service name`}},
		{"configuration name", func(s *config.Serve) { s.Certs.WebhookConfiguration = "" }, []string{"certs.webhookConfiguration: "}},
		{"serving renew after expiry", func(s *config.Serve) { s.Certs.ServingRenewBefore = s.Certs.ServingDuration }, []string{"certs.servingRenewBefore: 720h0m0s must be more than 0 and less than"}},
		{"ca renewed too late", func(s *config.Serve) { s.Certs.CARenewBefore = 24 * time.Hour }, []string{"certs.caRenewBefore: 24h0m0s must exceed the serving lifetime plus the propagation delay"}},
		{"serving too short", func(s *config.Serve) {
			s.Certs.ServingDuration, s.Certs.ServingRenewBefore = time.Second, time.Millisecond
		}, []string{"certs.servingDuration: 1s is too short"}},
		{"extra host", func(s *config.Serve) { s.Certs.ExtraHosts = []string{"127.0.0.1", "a_b"} }, []string{`certs.extraHosts: entry 1 "a_b" is neither`}},
		{"propagation too long", func(s *config.Serve) { s.Certs.PropagationDelay = 2 * time.Hour }, []string{"certs.propagationDelay: 2h0m0s is out of range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := selfSigned(t)
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

func TestCertsFromEnvironment(t *testing.T) {
	t.Setenv("MANDATE_CERTS_MODE", "selfSigned")
	t.Setenv("MANDATE_CERTS_SERVING_DURATION", "48h")
	t.Setenv("MANDATE_CERTS_SERVING_RENEW_BEFORE", "16h")
	t.Setenv("MANDATE_NAMESPACE", "mandate-system")
	t.Setenv("MANDATE_CERTS_EXTRA_HOSTS", "127.0.0.1,localhost")
	t.Setenv("MANDATE_WEBHOOK_CERT_DIR", t.TempDir())
	v := viper.New()
	if err := config.Bind(v); err != nil {
		t.Fatal(err)
	}
	s, err := config.Load(v)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	if s.Certs.Mode != config.CertsSelfSigned || s.Certs.ServingDuration != 48*time.Hour || s.Certs.ServingRenewBefore != 16*time.Hour {
		t.Errorf("Certs = %+v, want selfSigned, 48h, 16h", s.Certs)
	}
	if got := s.Certs.Hosts("mandate-system"); strings.Join(got, " ") != "mandate.mandate-system.svc mandate.mandate-system.svc.cluster.local 127.0.0.1 localhost" {
		t.Errorf("Hosts = %v", got)
	}
}
