// Package certs owns Mandate's built-in self-signed certificate mode: a CA
// kept in a Secret that every replica shares, a serving certificate each
// replica issues from it into its certificate directory, and the caBundle
// of both webhook configurations. It rotates both well before expiry, and
// rotates the CA with an overlap: the new CA joins the caBundle first, signs
// serving certificates only once the API server trusts it, and the old one
// leaves the caBundle only when no serving certificate it signed can still
// be valid. No admission fails during a rotation.
package certs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mandate-dev/mandate/config"
)

// Options configure a Rotator.
type Options struct {
	// Client reaches the API server; uncached, so every step sees the
	// latest Secret and configurations. Required.
	Client client.Client
	// Namespace and SecretName locate the CA Secret. Required.
	Namespace  string
	SecretName string
	// WebhookConfigurationName names both the mutating and the validating
	// webhook configuration whose caBundle is kept. Required.
	WebhookConfigurationName string
	// Hosts the serving certificate is valid for (DNS names or IP
	// addresses), e.g. the Service's name.namespace.svc. Required.
	Hosts []string
	// CertDir receives tls.crt and tls.key. Required.
	CertDir string
	// Lifetimes and renewal margins; the defaults when zero.
	CADuration         time.Duration
	CARenewBefore      time.Duration
	ServingDuration    time.Duration
	ServingRenewBefore time.Duration
	PropagationDelay   time.Duration
	CheckInterval      time.Duration
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
}

// Rotator keeps the CA Secret, the caBundles and the serving certificate
// files. Sync runs one check; Run repeats it.
type Rotator struct {
	o Options
}

var _ manager.LeaderElectionRunnable = (*Rotator)(nil)

// DefaultCheckInterval bounds the time between two checks, so that a
// caBundle reset by hand or a deleted file is repaired.
const DefaultCheckInterval = time.Minute

// New checks the options and returns a Rotator.
func New(o Options) (*Rotator, error) {
	if o.Client == nil || o.Namespace == "" || o.SecretName == "" || o.WebhookConfigurationName == "" || len(o.Hosts) == 0 || o.CertDir == "" {
		return nil, errors.New("certs: Client, Namespace, SecretName, WebhookConfigurationName, Hosts and CertDir are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.CADuration, config.DefaultCADuration)
	def(&o.CARenewBefore, o.CADuration/3)
	def(&o.ServingDuration, config.DefaultServingDuration)
	def(&o.ServingRenewBefore, o.ServingDuration/3)
	def(&o.PropagationDelay, config.DefaultPropagationDelay)
	def(&o.CheckInterval, DefaultCheckInterval)
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if err := config.CheckSchedule(o.CADuration, o.CARenewBefore, o.ServingDuration, o.ServingRenewBefore, o.PropagationDelay); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return &Rotator{o: o}, nil
}

// NeedLeaderElection is false: every replica writes its own serving
// certificate; the shared Secret and configurations are written with
// optimistic concurrency.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start runs Sync until ctx ends: at the next renewal, publication or
// retirement, at least every CheckInterval, and with a backoff after an
// error. It makes Rotator a manager.Runnable.
func (r *Rotator) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("certs")
	ctx = ctrl.LoggerInto(ctx, log)
	backoff := time.Second
	for {
		wait, err := r.Sync(ctx)
		if err != nil {
			log.Error(err, "certificate check failed; retrying", "retryIn", backoff)
			wait, backoff = backoff, min(2*backoff, r.o.CheckInterval)
		} else {
			backoff = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Sync runs one check, retrying at once when another replica changed the
// Secret or a configuration in between, and returns how long until the
// next check is due.
func (r *Rotator) Sync(ctx context.Context) (time.Duration, error) {
	var err error
	for range 5 {
		var wait time.Duration
		if wait, err = r.sync(ctx); err == nil || !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return wait, err
		}
		ctrl.LoggerFrom(ctx).V(1).Info("concurrent change; checking again", "error", err.Error())
	}
	return 0, err
}

func (r *Rotator) sync(ctx context.Context) (time.Duration, error) {
	log := ctrl.LoggerFrom(ctx)
	now := r.o.Clock()
	secret, st, err := r.secret(ctx, log, now)
	if err != nil {
		return 0, err
	}
	changed := false

	// 1. Retire the previous CA once no serving certificate it signed can
	// be valid.
	if st.previous != nil && !now.Before(st.previousRetire) {
		log.Info("retiring the previous CA from the caBundle", "ca", describe(st.previous), "retireAt", st.previousRetire)
		st.previous, st.previousPEM, st.previousRetire = nil, nil, time.Time{}
		changed = true
	}
	// A next CA that waited past its validity (a long outage) starts over.
	if st.next != nil {
		if err := ValidAt(st.next.Cert, now); err != nil {
			log.Info("dropping the next CA, no longer valid", "nextCA", describe(st.next.Cert), "reason", err.Error())
			st.next, st.nextPublished = nil, time.Time{}
			changed = true
		}
	}
	// 2. Start a CA rotation well before the active CA expires: the next
	// CA first only joins the caBundle.
	if st.next == nil && !now.Before(st.active.Cert.NotAfter.Add(-r.o.CARenewBefore)) {
		next, err := NewCA(r.o.SecretName, now, r.o.CADuration)
		if err != nil {
			return 0, err
		}
		log.Info("CA due for renewal: created the next CA, to be published in the caBundle before it signs anything",
			"activeCA", describe(st.active.Cert), "nextCA", describe(next.Cert))
		st.next, st.nextPublished = next, time.Time{}
		changed = true
	}
	if changed {
		if err := r.update(ctx, secret, st); err != nil {
			return 0, err
		}
	}

	// 3. The caBundle of both configurations: every CA of the state.
	bundle := st.bundle(now)
	republished, err := r.publish(ctx, log, bundle)
	if err != nil {
		return 0, err
	}
	if republished && st.next != nil && !st.nextPublished.IsZero() {
		// Someone had removed it: the propagation delay starts again.
		log.Info("next CA was missing from a caBundle: waiting the propagation delay again", "nextCA", describe(st.next.Cert))
		st.nextPublished = time.Time{}
	}

	// 4. The next CA has been in every caBundle for the propagation delay:
	// make it active. Until then it signs nothing.
	if st.next != nil {
		switch {
		case st.nextPublished.IsZero():
			st.nextPublished = now
			log.Info("next CA published in both webhook configurations; waiting for the API servers",
				"nextCA", describe(st.next.Cert), "activateAfter", now.Add(r.o.PropagationDelay))
			if err := r.update(ctx, secret, st); err != nil {
				return 0, err
			}
		case !now.Before(st.nextPublished.Add(r.o.PropagationDelay)):
			if err := ValidAt(st.next.Cert, now); err != nil {
				return 0, fmt.Errorf("next CA cannot be activated: %w", err)
			}
			st.previous, st.previousPEM = st.active.Cert, st.active.CertPEM
			st.previousRetire = now.Add(r.o.ServingDuration + r.o.PropagationDelay)
			st.active, st.next, st.nextPublished = st.next, nil, time.Time{}
			log.Info("next CA activated: serving certificates are now signed by it; the previous CA stays in the caBundle until every certificate it signed has expired",
				"activeCA", describe(st.active.Cert), "previousCA", describe(st.previous), "retireAt", st.previousRetire)
			if err := r.update(ctx, secret, st); err != nil {
				return 0, err
			}
		}
	}

	// 5. This replica's serving certificate.
	servingNotAfter, err := r.serving(ctx, log, st, bundle, now)
	if err != nil {
		return 0, err
	}
	setExpiry(st.active.Cert.NotAfter, servingNotAfter)
	return r.nextCheck(st, servingNotAfter, now), nil
}

// secret reads the CA Secret, creating it when absent. Of replicas racing
// to create it one wins; the others read the winner's.
func (r *Rotator) secret(ctx context.Context, log logr.Logger, now time.Time) (*corev1.Secret, caState, error) {
	key := types.NamespacedName{Namespace: r.o.Namespace, Name: r.o.SecretName}
	s := &corev1.Secret{}
	err := r.o.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		ca, err := NewCA(r.o.SecretName, now, r.o.CADuration)
		if err != nil {
			return nil, caState{}, err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.o.Namespace, Name: r.o.SecretName,
			Labels: map[string]string{config.LabelManagedBy: config.ManagedBy, config.LabelComponent: "webhook-ca"}},
			Type: corev1.SecretTypeOpaque}
		st := caState{active: ca}
		st.apply(s)
		if err := r.o.Client.Create(ctx, s); err != nil {
			return nil, caState{}, fmt.Errorf("unable to create the CA Secret %s: %w", key, err)
		}
		log.Info("created the CA Secret", "secret", key.String(), "ca", describe(ca.Cert))
		return s, st, nil
	}
	if err != nil {
		return nil, caState{}, fmt.Errorf("unable to read the CA Secret %s: %w", key, err)
	}
	st, notes, err := parseState(s)
	for _, n := range notes {
		log.Info("CA Secret repaired", "secret", key.String(), "note", n)
	}
	if err == nil {
		err = ValidAt(st.active.Cert, now)
	}
	if err != nil {
		// Nothing it signed can be trusted any more: no overlap is possible.
		ca, genErr := NewCA(r.o.SecretName, now, r.o.CADuration)
		if genErr != nil {
			return nil, caState{}, genErr
		}
		log.Error(err, "active CA unusable: replacing it at once, admissions fail until the new caBundle reaches the API servers",
			"secret", key.String(), "ca", describe(ca.Cert))
		st = caState{active: ca}
		if err := r.update(ctx, s, st); err != nil {
			return nil, caState{}, err
		}
	}
	return s, st, nil
}

func (r *Rotator) update(ctx context.Context, s *corev1.Secret, st caState) error {
	st.apply(s)
	if err := r.o.Client.Update(ctx, s); err != nil {
		return fmt.Errorf("unable to update the CA Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// serving checks this replica's serving certificate and issues a new one
// from the active CA when it is missing, unreadable, signed by another CA,
// for other hosts, or due for renewal. It returns the certificate in use.
func (r *Rotator) serving(ctx context.Context, log logr.Logger, st caState, bundle []byte, now time.Time) (time.Time, error) {
	current, err := ReadFiles(r.o.CertDir)
	reason := ""
	switch {
	case errors.Is(err, os.ErrNotExist):
		reason = "no serving certificate yet"
	case err != nil:
		reason = err.Error()
	default:
		if current.Cert.CheckSignatureFrom(st.active.Cert) != nil {
			reason = fmt.Sprintf("signed by another CA than the active %s", describe(st.active.Cert))
		} else if vErr := Verify(current.Cert, st.active.Cert, r.o.Hosts, now); vErr != nil {
			reason = vErr.Error()
		} else if renewAt := current.Cert.NotAfter.Add(-r.o.ServingRenewBefore); !now.Before(renewAt) {
			reason = fmt.Sprintf("due for renewal since %s", renewAt.UTC().Format(time.RFC3339))
		}
	}
	if reason == "" {
		return current.Cert.NotAfter, nil
	}
	// Check before writing: signed by a CA in the caBundle just published,
	// valid now, for every host.
	if !BundleContains(bundle, st.active.Cert) {
		return time.Time{}, fmt.Errorf("active CA %s is not in the caBundle: refusing to issue from it", describe(st.active.Cert))
	}
	kp, err := IssueServing(st.active, r.o.Hosts, now, r.o.ServingDuration)
	if err != nil {
		return time.Time{}, err
	}
	if err := Verify(kp.Cert, st.active.Cert, r.o.Hosts, now); err != nil {
		return time.Time{}, fmt.Errorf("refusing to write a bad serving certificate: %w", err)
	}
	if err := WriteFiles(r.o.CertDir, kp); err != nil {
		return time.Time{}, err
	}
	log.Info("wrote a new serving certificate", "reason", reason, "certDir", r.o.CertDir,
		"serving", describe(kp.Cert), "ca", describe(st.active.Cert), "hosts", r.o.Hosts)
	return kp.Cert.NotAfter, nil
}

// nextCheck is the time until the earliest due step, at most
// CheckInterval and at least a second.
func (r *Rotator) nextCheck(st caState, servingNotAfter, now time.Time) time.Duration {
	due := []time.Time{servingNotAfter.Add(-r.o.ServingRenewBefore), st.active.Cert.NotAfter.Add(-r.o.CARenewBefore)}
	if st.next != nil && !st.nextPublished.IsZero() {
		due = append(due, st.nextPublished.Add(r.o.PropagationDelay))
	}
	if st.previous != nil {
		due = append(due, st.previousRetire)
	}
	wait := r.o.CheckInterval
	for _, t := range due {
		wait = min(wait, t.Sub(now))
	}
	return max(wait, time.Second)
}

// Prime runs Sync until it succeeds or timeout passes, so that the serving
// certificate exists before the webhook server starts.
func (r *Rotator) Prime(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := ctrl.LoggerFrom(ctx).WithName("certs")
	for {
		_, err := r.Sync(ctrl.LoggerInto(ctx, log))
		if err == nil {
			return nil
		}
		log.Error(err, "certificate setup failed; retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("no serving certificate after %s: %w", timeout, err)
		case <-time.After(2 * time.Second):
		}
	}
}
