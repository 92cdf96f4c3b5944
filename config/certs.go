package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// scheduleKeys maps CheckSchedule's fields to their keys.
var scheduleKeys = map[string]string{
	"CADuration":         "certs.caDuration",
	"CARenewBefore":      "certs.caRenewBefore",
	"ServingDuration":    "certs.servingDuration",
	"ServingRenewBefore": "certs.servingRenewBefore",
	"PropagationDelay":   "certs.propagationDelay",
}

// validate checks the certs.* keys; namespace and certDir are where the
// selfSigned mode keeps its CA Secret and writes the serving certificate.
func (c Certs) validate(namespace, certDir string) []error {
	switch c.Mode {
	case CertsFiles:
		return nil
	case CertsSelfSigned:
	default:
		return []error{fieldErr("certs.mode", "%q is not a mode (%q: tls.crt and tls.key of webhook.certDir, e.g. from cert-manager; %q: Mandate's own rotating CA)",
			c.Mode, CertsFiles, CertsSelfSigned)}
	}
	var errs []error
	if namespace == "" {
		errs = append(errs, fieldErr("namespace", "is empty: certs.mode selfSigned keeps its CA Secret in Mandate's namespace"))
	}
	if certDir == "" {
		errs = append(errs, fieldErr("webhook.certDir", "is empty: certs.mode selfSigned writes tls.crt and tls.key there (a writable directory, e.g. an emptyDir)"))
	} else if fi, err := os.Stat(certDir); err != nil || !fi.IsDir() {
		errs = append(errs, fieldErr("webhook.certDir", "%q is not a directory: certs.mode selfSigned writes tls.crt and tls.key there (a writable directory)", certDir))
	}
	for key, val := range map[string]string{"certs.secretName": c.SecretName, "certs.webhookConfiguration": c.WebhookConfiguration} {
		if msgs := validation.IsDNS1123Subdomain(val); len(msgs) > 0 {
			errs = append(errs, fieldErr(key, "%q is not an object name: %s", val, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Label(c.ServiceName); len(msgs) > 0 {
		errs = append(errs, fieldErr("certs.serviceName", "%q is not a Service name: %s", c.ServiceName, strings.Join(msgs, "; ")))
	}
	for i, h := range c.ExtraHosts {
		if net.ParseIP(h) == nil {
			if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
				errs = append(errs, fieldErr("certs.extraHosts", "entry %d %q is neither an IP address nor a DNS name: %s", i, h, strings.Join(msgs, "; ")))
			}
		}
	}
	if c.PropagationDelay > time.Hour {
		errs = append(errs, fieldErr("certs.propagationDelay", "%s is out of range (0-1h)", c.PropagationDelay))
	}
	err := CheckSchedule(c.CADuration, c.CARenewBefore, c.ServingDuration, c.ServingRenewBefore, c.PropagationDelay)
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			var se *ScheduleError
			if errors.As(e, &se) {
				errs = append(errs, fieldErr(scheduleKeys[se.Field], "%s", se.Msg))
			} else {
				errs = append(errs, fmt.Errorf("certs: %w", e))
			}
		}
	}
	return errs
}

// Hosts are the names the serving certificate is for: the Service's
// in-cluster DNS names, then ExtraHosts.
func (c Certs) Hosts(namespace string) []string {
	svc := c.ServiceName + "." + namespace + ".svc"
	return append([]string{svc, svc + ".cluster.local"}, c.ExtraHosts...)
}
