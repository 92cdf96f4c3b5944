package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/ledger"
)

// TenantLedgerGVK is the kind of the API objects that hold the quota
// reservations of one tenant tree for every replica
// (charts/mandate/crds/mandate.dev_tenantledgers.yaml).
var TenantLedgerGVK = schema.GroupVersionKind{Group: "mandate.dev", Version: "v1alpha1", Kind: "TenantLedger"}

// maxCommitAttempts bounds how often one admission decides again after
// another replica committed to the same tree first (the admission's own
// deadline usually ends it sooner).
const maxCommitAttempts = 200

// maxBackoff bounds the random pause of a commit loop after a conflict, so
// replicas that collided do not collide again at once.
const maxBackoff = 20 * time.Millisecond

// ErrLedgerUnavailable wraps a failure to read or commit the shared ledger:
// the admission fails rather than spend quota no replica can see.
var ErrLedgerUnavailable = errors.New("the shared quota ledger is unavailable")

// shared keeps the reservations of each tenant tree in a TenantLedger
// object, so that every replica checks against every replica's
// reservations and a restarted replica finds them again. The object is the
// authority; the local ledger mirrors it (as last read or written, plus the
// reservations decided here and not committed yet) and counts what the
// pods seen here consumed of each. A decision reads the mirror; its commit
// is an update at the resourceVersion the mirror was read at
// (compare-and-swap). Decisions made on a tree while a commit is in flight
// join the next batch, committed by one update: one API round trip per
// batch, not per decision. When another replica committed in between, the
// update conflicts: the mirror is read again and every decision of the
// batch (and of the one after it, made on top of it) is staged again,
// re-checked against what the object holds now and made again only when a
// quota limit it relied on flipped (decideShared).
type shared struct {
	client client.Client
	trees  sync.Map // root tenant → *sharedTree
	// grants, when set, lets this replica admit from escrowed grants
	// (ShareGrants).
	grants *grants
}

// sharedTree is one tree's mirror and commit state, guarded by mu. mu is
// held while deciding (local work) and reading the object, never while
// writing it.
type sharedTree struct {
	mu sync.Mutex
	// fresh says the mirror holds the object of resourceVersion rv (""
	// with exists false: there is none yet) plus uncommitted decisions.
	fresh  bool
	exists bool
	rv     string
	// open collects the decisions not yet committed; writing says a
	// commit is in flight.
	open    *batch
	writing bool
	// reclaims are the reclaim requests the object holds (holder → when
	// asked), answered the latest one of another holder this replica
	// answered, and quiet until when it takes no more grant in the tree
	// after answering one (grants.go).
	reclaims map[string]time.Time
	answered time.Time
	quiet    time.Time
}

// batch is decisions committed by one write. done closes when it is
// committed (err nil), refused (err), or must be decided again (retry).
type batch struct {
	done  chan struct{}
	retry bool
	err   error
	// decisions counts the decisions that joined it.
	decisions int
}

// ShareReservations makes the state keep its quota reservations in
// TenantLedger objects through c (which must read uncached), shared by
// every replica: Decide then commits reservations with compare-and-swap
// updates, batched per tenant tree. Call it before admissions start.
func (s *State) ShareReservations(c client.Client) { s.shared = &shared{client: c} }

// CheckSharedLedger returns an error that says what to do when the
// TenantLedger kind is not served (its CRD is not installed).
func CheckSharedLedger(mapper meta.RESTMapper) error {
	if _, err := mapper.RESTMapping(TenantLedgerGVK.GroupKind(), TenantLedgerGVK.Version); err != nil {
		return fmt.Errorf("quota.shared needs the %s CRD (the Helm chart installs it: charts/mandate/crds): %w", TenantLedgerGVK.Kind, err)
	}
	return nil
}

func (sh *shared) tree(root string) *sharedTree {
	t, _ := sh.trees.LoadOrStore(root, &sharedTree{})
	return t.(*sharedTree)
}

// stage makes one admission's change to a tree's mirror, under the tree's
// lock: it says whether there is anything new to commit. When another
// replica committed first, the stage runs again on what the object holds
// then.
type stage func() (commit bool, err error)

// transactShared runs st on root's mirror and waits until what it staged
// is committed to the tree's TenantLedger (with the other decisions of its
// batch), running it again after a conflict.
func (s *State) transactShared(ctx context.Context, root string, st stage) error {
	t := s.shared.tree(root)
	for range maxCommitAttempts {
		b, err := s.stageLocally(ctx, root, t, st)
		if b == nil || err != nil {
			return err
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the commit: %v", ErrLedgerUnavailable, ctx.Err())
		}
		if !b.retry {
			return b.err
		}
	}
	return fmt.Errorf("%w: %d replicas' commits to %s %s kept conflicting with this one", ErrLedgerUnavailable,
		maxCommitAttempts, TenantLedgerGVK.Kind, ledgerName(root))
}

// decideShared is Decide's transaction with a shared ledger. The decision
// is made outside the tree's lock, on the mirror as it is; the stage, under
// the lock on the mirror as last read, re-checks the limits it relied on
// (again after every conflict, on the object as read then) and stages it
// if they hold. When one flipped nothing is staged and the admission
// decides again outside the lock; after optimisticAttempts such decisions
// it decides inside the stage, as one step with the commit.
func (s *State) decideShared(ctx context.Context, tenant, key, ownerUID string, decide func(View) (Reservation, error)) error {
	root := s.ledger.RootOf(tenant)
	g := s.shared.grants
	reclaimed := false
	for attempt := 1; attempt <= optimisticAttempts; attempt++ {
		v := s.view(tenant, key, ownerUID)
		r, err := decide(v)
		if err != nil {
			return err
		}
		if g != nil && r.ReliedKnown && len(r.Relied) > 0 {
			g.remember(tenant, r.Relied)
			if !reclaimed && s.reclaimWorth(tenant, key, ownerUID, r) {
				// Only other replicas' unspent grants stand between this
				// workload and a better decision: ask for them back, then
				// decide again on what they left.
				reclaimed = true
				if err := s.reclaim(ctx, root, tenant); err != nil {
					return err
				}
				attempt--
				continue
			}
			if s.spendGrant(tenant, key, ownerUID, v, r) {
				grantSpends.WithLabelValues(spendGrant).Inc()
				if s.grantRunningLow(tenant) {
					g.askRefill(root, tenant)
				}
				return nil
			}
		}
		flipped := false
		err = s.transactShared(ctx, root, func() (bool, error) {
			_, had := s.ledger.Reservation(key)
			if len(r.GPUs) > 0 && !r.stands(v.Usage, s.ledger.UsageWithout(tenant, key, ownerUID)) {
				flipped = true
				return false, nil
			}
			flipped = false
			if r.keeps() {
				return false, nil
			}
			s.ledger.Release(key)
			return s.stageReservation(tenant, key, r, had), nil
		})
		if err != nil || !flipped {
			if err == nil && g != nil && len(r.GPUs) > 0 {
				grantSpends.WithLabelValues(spendPool).Inc()
				g.askRefill(root, tenant)
			}
			return err
		}
		if attempt < optimisticAttempts {
			redecisions.WithLabelValues(redecideOutside).Inc()
		}
	}
	redecisions.WithLabelValues(redecideLocked).Inc()
	return s.transactShared(ctx, root, func() (bool, error) {
		before, had := s.ledger.Reservation(key)
		s.ledger.Release(key)
		r, err := decide(View{Usage: s.ledger.UsageWithout(tenant, "", ownerUID), Cluster: s.Snapshot()})
		if err != nil || r.keeps() {
			if had {
				s.ledger.Put(key, before)
			}
			return false, err
		}
		return s.stageReservation(tenant, key, r, had), nil
	})
}

// grantRunningLow says whether less than half of this replica's grant of
// tenant is left unspent on some key: time to top it up, before it runs
// dry. Without a grant (a spend that needed none) there is nothing to top
// up: a commit to the pool asks for one.
func (s *State) grantRunningLow(tenant string) bool {
	g, spent, ok := s.ledger.OwnGrant(tenant)
	if !ok {
		return false
	}
	for k, n := range g.GPUs {
		if 2*spent[k].Total > n.Total {
			return true
		}
	}
	return false
}

// stageReservation puts r under key on the mirror, whose earlier
// reservation (had: there was one) was released: whether there is anything
// to commit.
func (s *State) stageReservation(tenant, key string, r Reservation, had bool) bool {
	if g := s.shared.grants; g != nil && len(r.GPUs) > 0 {
		if _, _, own := s.ledger.OwnGrant(tenant); own {
			// The decision counted this replica's unspent grant of the
			// tenant as free (usageWithout): the write gives it back.
			s.ledger.SetOwnGrant(tenant, nil, s.ledger.Now().Add(g.opts.Lease).Truncate(time.Second))
		}
	}
	if len(r.GPUs) > 0 {
		s.ledger.Put(key, ledger.Reservation{Tenant: tenant, GPUs: maps.Clone(r.GPUs), Preemptible: r.Preemptible,
			Expires: s.ledger.Now().Add(s.confirmationWindow()).Truncate(time.Second), Generation: r.Generation})
		return true
	}
	return had // a release to commit, or nothing reserved before or now
}

// stageLocally runs st on the mirror (read first when stale) and, when it
// staged something, adds it to the open batch and starts a commit unless
// one is in flight. It returns the batch to wait for; nil when there is
// nothing to commit.
func (s *State) stageLocally(ctx context.Context, root string, t *sharedTree, st stage) (*batch, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.fresh && !t.writing {
		if err := s.shared.read(ctx, root, t, s.ledger); err != nil {
			return nil, err
		}
	}
	commit, err := st()
	if err != nil || !commit {
		return nil, err
	}
	if t.open == nil {
		t.open = &batch{done: make(chan struct{})}
	}
	b := t.open
	b.decisions++
	if !t.writing {
		t.writing = true
		go s.commit(context.WithoutCancel(ctx), root, t)
	}
	return b, nil
}

// commit writes the open batches of t, one write each, until none is left.
func (s *State) commit(ctx context.Context, root string, t *sharedTree) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.open != nil {
		b := t.open
		t.open = nil
		// The mirror holds this batch's decisions and none made after.
		rs := s.ledger.TreeReservations(root)
		gs := s.ledger.TreeGrants(root)
		reclaims := maps.Clone(t.reclaims)
		t.mu.Unlock()
		began := time.Now()
		err := s.shared.write(ctx, root, t, rs, gs, reclaims)
		ledgerCommitDuration.Observe(time.Since(began).Seconds())
		ledgerBatch.Observe(float64(b.decisions))
		t.mu.Lock()
		switch {
		case err == nil:
			ledgerCommits.WithLabelValues(commitCommitted).Inc()
			s.ledger.CommittedGrants(root, gs)
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			// Another replica committed first: this batch, and the
			// decisions made on top of it since, are decided again on
			// what the object holds now, after a random pause that lets
			// the other replica's next commit through.
			ledgerCommits.WithLabelValues(commitConflict).Inc()
			b.retry = true
			if t.open != nil {
				t.open.retry = true
				close(t.open.done)
				t.open = nil
			}
			t.fresh = false
			if rerr := s.shared.read(ctx, root, t, s.ledger); rerr != nil {
				b.retry, b.err = false, rerr
				close(b.done)
				continue
			}
			close(b.done)
			// Decisions made during the pause join the next batch, on the
			// mirror just read.
			t.mu.Unlock()
			time.Sleep(rand.N(maxBackoff))
			t.mu.Lock()
			continue
		default:
			ledgerCommits.WithLabelValues(commitError).Inc()
			b.err = fmt.Errorf("%w: unable to commit to %s %s: %v", ErrLedgerUnavailable, TenantLedgerGVK.Kind, ledgerName(root), err)
			if t.open != nil {
				t.open.retry = true
				close(t.open.done)
				t.open = nil
			}
			t.fresh = false
		}
		close(b.done)
	}
	t.writing = false
}

// LoadReservations counts the unexpired reservations, gang claims and
// grants a TenantLedger object holds (a snapshot's or a live list's), as a replica
// sharing them would: for reports, not for deciding.
func (s *State) LoadReservations(obj *unstructured.Unstructured) error {
	rs, err := reservationsOf(obj)
	if err != nil {
		return fmt.Errorf("%s %s: %w", TenantLedgerGVK.Kind, obj.GetName(), err)
	}
	trees := map[string]map[string]ledger.Reservation{}
	for key, r := range rs {
		root := s.ledger.RootOf(r.Tenant)
		if trees[root] == nil {
			trees[root] = map[string]ledger.Reservation{}
		}
		trees[root][key] = r
	}
	for root, tree := range trees {
		s.ledger.SetTreeReservations(root, tree)
	}
	gs, _, err := grantsOf(obj)
	if err != nil {
		return fmt.Errorf("%s %s: %w", TenantLedgerGVK.Kind, obj.GetName(), err)
	}
	byRoot := map[string][]ledger.Grant{}
	for _, g := range gs {
		root := s.ledger.RootOf(g.Tenant)
		byRoot[root] = append(byRoot[root], g)
	}
	for root, tree := range byRoot {
		s.ledger.SetTreeGrants(root, tree)
	}
	return nil
}

// read loads the tree's TenantLedger into the mirror.
func (sh *shared) read(ctx context.Context, root string, t *sharedTree, l *ledger.Ledger) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(TenantLedgerGVK)
	err := sh.client.Get(ctx, client.ObjectKey{Name: ledgerName(root)}, obj)
	switch {
	case apierrors.IsNotFound(err):
		l.SetTreeReservations(root, nil)
		l.SetTreeGrants(root, nil)
		t.reclaims = nil
		t.fresh, t.exists, t.rv = true, false, ""
		return nil
	case err != nil:
		return fmt.Errorf("%w: unable to read %s %s: %v", ErrLedgerUnavailable, TenantLedgerGVK.Kind, ledgerName(root), err)
	}
	return t.load(root, obj, l)
}

// load makes the mirror the object obj (the tree's TenantLedger as read or
// watched). Callers hold t.mu and no commit is in flight.
func (t *sharedTree) load(root string, obj *unstructured.Unstructured, l *ledger.Ledger) error {
	rs, err := reservationsOf(obj)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrLedgerUnavailable, TenantLedgerGVK.Kind, ledgerName(root), err)
	}
	gs, reclaims, err := grantsOf(obj)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrLedgerUnavailable, TenantLedgerGVK.Kind, ledgerName(root), err)
	}
	l.SetTreeReservations(root, rs)
	l.SetTreeGrants(root, gs)
	t.reclaims = reclaims
	t.fresh, t.exists, t.rv = true, true, obj.GetResourceVersion()
	return nil
}

// write stores rs as the tree's reservations if the object is still at the
// mirror's resourceVersion (or, when there was none, still absent). It
// runs without t.mu: only the commit loop, one per tree, writes t.exists
// and t.rv meanwhile, and readers wait for it (t.writing).
func (sh *shared) write(ctx context.Context, root string, t *sharedTree, rs map[string]ledger.Reservation, gs []ledger.Grant,
	reclaims map[string]time.Time) error {
	spec, err := specOf(rs)
	if err != nil {
		return err
	}
	if err := putGrants(spec, gs, reclaims); err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetGroupVersionKind(TenantLedgerGVK)
	obj.SetName(ledgerName(root))
	obj.SetLabels(map[string]string{treeLabel: labelValue(root)})
	if t.exists {
		obj.SetResourceVersion(t.rv)
		err = sh.client.Update(ctx, obj)
	} else {
		err = sh.client.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	t.exists, t.rv = true, obj.GetResourceVersion()
	return nil
}

// specOf is a TenantLedger's spec for rs: one line per reservation, sorted
// by key (see the CRD's description of spec.reservations).
func specOf(rs map[string]ledger.Reservation) (map[string]any, error) {
	keys := slices.Sorted(maps.Keys(rs))
	var b strings.Builder
	for _, key := range keys {
		r := rs[key]
		if strings.ContainsAny(key+r.Tenant, " \n") || key == "" || r.Tenant == "" {
			return nil, fmt.Errorf("reservation %q of tenant %q cannot be stored: a key or tenant with a space", key, r.Tenant)
		}
		if r.Owner != "" {
			if strings.ContainsAny(r.Owner, " \n") {
				return nil, fmt.Errorf("gang claim %q names an owner UID with a space", key)
			}
			fmt.Fprintf(&b, "%s %s C %d owner=%s\n", key, r.Tenant, r.Expires.Unix(), r.Owner)
			continue
		}
		mark := "N"
		if r.Preemptible {
			mark = "P"
		}
		fmt.Fprintf(&b, "%s %s %s %d ", key, r.Tenant, mark, r.Expires.Unix())
		for i, res := range slices.Sorted(maps.Keys(r.GPUs)) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%d", res, r.GPUs[res])
		}
		if r.Generation > 1 {
			fmt.Fprintf(&b, " gen=%d", r.Generation)
		}
		b.WriteByte('\n')
	}
	return map[string]any{"reservations": b.String()}, nil
}

// reservationsOf reads a TenantLedger's spec.reservations.
func reservationsOf(obj *unstructured.Unstructured) (map[string]ledger.Reservation, error) {
	text, _, err := unstructured.NestedString(obj.Object, "spec", "reservations")
	if err != nil {
		return nil, err
	}
	rs := map[string]ledger.Reservation{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		key, r, err := parseReservation(line)
		if err != nil {
			return nil, fmt.Errorf("spec.reservations line %d %q: %w", n+1, line, err)
		}
		rs[key] = r
	}
	return rs, nil
}

// legacySharedSuffix marked shared demand before topology.SharedSuffix,
// which it collided with: the "@" of a product's key. A replica of the
// release before writes it until it is replaced.
const legacySharedSuffix = "@milli"

// parseReservation reads one line of spec.reservations.
func parseReservation(line string) (string, ledger.Reservation, error) {
	f := strings.Fields(line)
	var generation int64
	if len(f) == 6 && f[2] != "C" {
		gen, ok := strings.CutPrefix(f[5], "gen=")
		n, err := strconv.ParseInt(gen, 10, 64)
		if !ok || err != nil || n < 1 {
			return "", ledger.Reservation{}, fmt.Errorf("%q is not gen=GENERATION", f[5])
		}
		generation, f = n, f[:5]
	}
	if len(f) != 5 || (f[2] != "P" && f[2] != "N" && f[2] != "C") {
		return "", ledger.Reservation{}, errors.New("want KEY TENANT P|N EXPIRES RESOURCE=GPUS[,...] [gen=GENERATION] or KEY TENANT C EXPIRES owner=UID")
	}
	expires, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return "", ledger.Reservation{}, fmt.Errorf("expiry: %w", err)
	}
	if f[2] == "C" {
		owner, ok := strings.CutPrefix(f[4], "owner=")
		if !ok || owner == "" {
			return "", ledger.Reservation{}, fmt.Errorf("%q is not owner=UID", f[4])
		}
		return f[0], ledger.Reservation{Tenant: f[1], Owner: owner, Expires: time.Unix(expires, 0)}, nil
	}
	r := ledger.Reservation{Tenant: f[1], Preemptible: f[2] == "P", Expires: time.Unix(expires, 0), GPUs: map[string]int{}, Generation: generation}
	for _, kv := range strings.Split(f[4], ",") {
		res, n, ok := strings.Cut(kv, "=")
		gpus, err := strconv.Atoi(n)
		if !ok || res == "" || err != nil || gpus < 0 {
			return "", ledger.Reservation{}, fmt.Errorf("%q is not RESOURCE=GPUS", kv)
		}
		if base, ok := strings.CutSuffix(res, legacySharedSuffix); ok {
			res = ledger.SharedKey(base)
		}
		r.GPUs[res] = gpus
	}
	return f[0], r, nil
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ledgerName names a tree's TenantLedger: the root tenant's name when it
// is a valid object name, else a digest of it.
func ledgerName(root string) string {
	if dnsLabel.MatchString(root) {
		return root
	}
	sum := sha256.Sum256([]byte(root))
	return "tree-" + hex.EncodeToString(sum[:8])
}

// labelValue is root as a label value (its digest when not a valid one).
func labelValue(root string) string {
	if dnsLabel.MatchString(root) {
		return root
	}
	return ledgerName(root)
}
