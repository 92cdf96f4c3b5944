package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
)

// Escrowed grants (the demarcation protocol): each replica holds a share
// of a tenant's headroom in the tree's TenantLedger, a ledger.Grant, that
// it spends without a write. The invariant, at every level of every tree:
// stored usage + holds + unsettled reservations + outstanding grants ≤
// limit. A grant is taken by compare-and-swap before it is spent; a
// decision its grant does not cover commits to the TenantLedger as before
// (the pool), giving back its unspent grant in the same write; a decision
// that only other replicas' grants stand in the way of asks them to give
// back theirs (a reclaim) and decides again. docs/architecture.md, "The
// shared ledger: escrowed grants".

// GrantOptions configure this replica's grants.
type GrantOptions struct {
	// Holder names this replica in the TenantLedgers (HolderName's
	// default: the pod's name).
	Holder string
	// Lease is how long a grant is spendable after its last write: the
	// holder renews it every Lease/3.
	Lease time.Duration
	// StoreBound is how long past its lease another holder's grant still
	// counts: the API server's request timeout, past which nothing its
	// holder answered can still be stored.
	StoreBound time.Duration
	// ReclaimWait bounds how long a decision waits for the other holders
	// to give back their unspent grant before it decides on what is left.
	ReclaimWait time.Duration
}

// DefaultGrantReclaimWait is GrantOptions.ReclaimWait's default; the
// others' are config.DefaultGrantLease and config.DefaultGrantStoreBound.
const DefaultGrantReclaimWait = 2 * time.Second

// HolderName is this replica's default grant holder name: the pod's name
// (POD_NAME, which the chart sets), else the host's with a random suffix,
// so that a restarted replica never spends what its predecessor was
// granted.
func HolderName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "mandate"
	}
	return host + "-" + rand.String(6)
}

// grants is a replica's grant machinery (ShareGrants).
type grants struct {
	opts GrantOptions
	// limits are the quota limits the latest decision of each tenant
	// relied on: what a grant of it is sized by.
	mu     sync.Mutex
	limits map[string][]ledger.Limit
	// refills asks the grant loop to take or top up a tenant's grant.
	refills chan refill
}

type refill struct{ root, tenant string }

// ShareGrants makes this replica admit from escrowed grants of the shared
// ledger (ShareReservations first). RunGrants must run for it: it
// renews, refills and gives back the grants.
func (s *State) ShareGrants(o GrantOptions) {
	if s.shared == nil || o.Holder == "" {
		return
	}
	if o.Lease <= 0 {
		o.Lease = config.DefaultGrantLease
	}
	if o.StoreBound <= 0 {
		o.StoreBound = config.DefaultGrantStoreBound
	}
	if o.ReclaimWait <= 0 {
		o.ReclaimWait = DefaultGrantReclaimWait
	}
	s.shared.grants = &grants{opts: o, limits: map[string][]ledger.Limit{}, refills: make(chan refill, 256)}
	s.ledger.SetHolder(o.Holder, o.StoreBound)
}

func (g *grants) remember(tenant string, relied []ledger.Limit) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limits[tenant] = relied
}

func (g *grants) limitsOf(tenant string) []ledger.Limit {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limits[tenant]
}

func (g *grants) askRefill(root, tenant string) {
	select {
	case g.refills <- refill{root: root, tenant: tenant}:
	default: // the loop is busy: the next renewal sizes it
	}
}

// spendGrant commits r, decided on v, from this replica's grant of tenant
// when the grant covers every limit r relied on: no write. It says
// whether it did.
func (s *State) spendGrant(tenant, key, ownerUID string, v View, r Reservation) bool {
	if !r.ReliedKnown || len(r.GPUs) == 0 || r.Generation > 0 {
		return false
	}
	for k := range r.GPUs {
		if strings.HasSuffix(k, topology.SharedSuffix) {
			return false // shares of GPUs: the pool decides them
		}
	}
	// Cover is needed where the decision relied on being within a limit:
	// a ceiling not busy (against the total), a guarantee not exceeded by
	// non-preemptible work. Past a ceiling the workload only waits in the
	// queue (a warning), so a busy ceiling needs none.
	total := make(map[string]int, len(r.Relied))
	var nonPreemptible map[string]int
	for _, lim := range r.Relied {
		need := max(lim.Demand, r.GPUs[lim.Key])
		if !lim.Busy {
			total[lim.Key] = max(total[lim.Key], need)
		}
		if !r.Preemptible {
			if lim.OverGuarantee {
				return false // over a guarantee yet non-preemptible: the pool decides
			}
			if nonPreemptible == nil {
				nonPreemptible = map[string]int{}
			}
			nonPreemptible[lim.Key] = max(nonPreemptible[lim.Key], need)
		}
	}
	return s.ledger.SpendGrant(key, tenant, ownerUID, r.GPUs, r.Preemptible, r.Generation, s.confirmationWindow(), total, nonPreemptible,
		func(now map[string]map[string]ledger.Usage) bool { return r.stands(v.Usage, now) })
}

// reclaimWorth says whether other holders' grants are what made r less
// than it would be: work that asked for its guarantee found a guarantee
// exceeded (and was made borrowed, or denied) that would not be with
// every other holder's grant given back. A busy ceiling only warns: no
// reclaim for it.
func (s *State) reclaimWorth(tenant, key, ownerUID string, r Reservation) bool {
	if !r.ReliedKnown || !r.WantsGuarantee {
		return false
	}
	over := false
	for _, lim := range r.Relied {
		over = over || lim.OverGuarantee
	}
	if !over || !s.ledger.OthersGrant(tenant) {
		return false
	}
	t := s.shared.tree(s.ledger.RootOf(tenant))
	t.mu.Lock()
	since := t.reclaims[s.shared.grants.opts.Holder]
	t.mu.Unlock()
	without := s.ledger.UsageWithoutOthersGrants(tenant, key, ownerUID, since)
	for _, lim := range r.Relied {
		if lim.OverGuarantee && without[lim.Tenant][lim.Key].NonPreemptible+lim.Demand <= lim.Guaranteed {
			return true
		}
	}
	return false
}

// reclaim asks the other holders of root's tree to give back their
// unspent grants (a reclaim line in the TenantLedger, which they watch)
// and waits, at most ReclaimWait, until every grant counting at tenant
// has answered it or gone.
func (s *State) reclaim(ctx context.Context, root, tenant string) error {
	g := s.shared.grants
	t := s.shared.tree(root)
	at := s.ledger.Now().Truncate(time.Microsecond)
	grantSpends.WithLabelValues(spendReclaim).Inc()
	err := s.transactShared(ctx, root, func() (bool, error) {
		if t.reclaims == nil {
			t.reclaims = map[string]time.Time{}
		}
		t.reclaims[g.opts.Holder] = at
		return true, nil
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(g.opts.ReclaimWait)
	for s.ledger.OthersUnanswered(tenant, at) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for the other replicas' grants: %v", ErrLedgerUnavailable, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if err := s.refresh(ctx, root, t); err != nil {
			return err
		}
	}
	return nil
}

// refresh reads the tree's TenantLedger into the mirror unless a commit
// is in flight (whose end reads or writes it).
func (s *State) refresh(ctx context.Context, root string, t *sharedTree) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.writing {
		return nil
	}
	return s.shared.read(ctx, root, t, s.ledger)
}

// RunGrants keeps this replica's grants (ShareGrants) until ctx ends: it
// watches the TenantLedgers through w (the others' grants and reclaims
// reach the mirror as they are written, and a reclaim is answered by
// giving back the unspent grant), renews its grants every Lease/3 (a
// tenant with nothing spent since the last renewal gives its grant back),
// and takes or tops up a tenant's grant when a decision asks.
func (s *State) RunGrants(ctx context.Context, w client.WithWatch) error {
	if s.shared == nil || s.shared.grants == nil {
		<-ctx.Done()
		return nil
	}
	g := s.shared.grants
	go s.watchLedgers(ctx, w)
	renew := time.NewTicker(g.opts.Lease / 3)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case rf := <-g.refills:
			if err := s.topUp(ctx, rf.root, rf.tenant); err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "unable to take a quota grant", "tree", rf.root, "tenant", rf.tenant)
			}
		case <-renew.C:
			s.renewGrants(ctx)
		}
	}
}

// renewGrants renews the lease of every grant of this replica, sized
// again to the free quota; a grant of which nothing is spent and that
// was not used since the last renewal is given back.
func (s *State) renewGrants(ctx context.Context) {
	roots := map[string]bool{}
	s.shared.trees.Range(func(k, _ any) bool {
		roots[k.(string)] = true
		return true
	})
	for root := range roots {
		tenants := s.ledger.OwnGrantTenants(root)
		if len(tenants) == 0 {
			continue
		}
		err := s.transactShared(ctx, root, func() (bool, error) {
			for _, tenant := range tenants {
				s.stageGrant(root, tenant, true)
			}
			return true, nil
		})
		if err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "unable to renew the quota grants", "tree", root)
		}
	}
}

// topUp takes or tops up this replica's grant of tenant.
func (s *State) topUp(ctx context.Context, root, tenant string) error {
	return s.transactShared(ctx, root, func() (bool, error) { return s.stageGrant(root, tenant, false), nil })
}

// stageGrant stages this replica's grant of tenant on the mirror (under
// the tree's lock): what is spent of it plus a share of the free quota of
// every limit the tenant's latest decision relied on, as non-preemptible
// work where the guarantees leave room. The share is the free quota over
// the holders plus one, so grants shrink as free quota does; none while
// the replica answered a reclaim lately. renewing, a grant the tenant has
// not spent from is given back.
func (s *State) stageGrant(root, tenant string, renewing bool) bool {
	g := s.shared.grants
	t := s.shared.tree(root)
	now := s.ledger.Now()
	expires := now.Add(g.opts.Lease).Truncate(time.Second)
	own, spent, had := s.ledger.OwnGrant(tenant)
	limits := g.limitsOf(tenant)
	if len(limits) == 0 || now.Before(t.quiet) || (renewing && len(spent) == 0) {
		if !had {
			return false
		}
		s.ledger.SetOwnGrant(tenant, nil, expires) // keeps what is spent
		return true
	}
	usage := s.ledger.UsageWithout(tenant, "", "")
	share := map[string]ledger.Usage{}
	holders := s.ledger.TreeHolders(root) + 1
	for _, lim := range limits {
		u := usage[lim.Tenant][lim.Key]
		free := lim.Ceiling - u.Total
		freeNP := min(lim.Guaranteed-u.NonPreemptible, free)
		cur, seen := share[lim.Key]
		if !seen {
			cur = ledger.Usage{Total: math.MaxInt, NonPreemptible: math.MaxInt}
		}
		cur.Total = min(cur.Total, max(free, 0)/holders)
		cur.NonPreemptible = min(cur.NonPreemptible, max(freeNP, 0)/holders)
		share[lim.Key] = cur
	}
	next := make(map[string]ledger.Usage, len(share))
	for k, n := range share {
		sp := spent[k]
		next[k] = ledger.Usage{Total: sp.Total + n.Total, NonPreemptible: sp.NonPreemptible + min(n.NonPreemptible, n.Total)}
	}
	if had && maps.Equal(next, own.GPUs) && own.Expires.Sub(now) > g.opts.Lease/2 {
		return false // nothing to write
	}
	if !had && !slices.ContainsFunc(slices.Collect(maps.Values(next)), func(u ledger.Usage) bool { return u.Total > 0 }) {
		return false // no free quota to grant
	}
	s.ledger.SetOwnGrant(tenant, next, expires)
	return true
}

// watchLedgers follows the TenantLedgers: each new version reaches its
// tree's mirror (when no commit of it is in flight), and a reclaim of
// another holder is answered. It watches again after an error, until ctx
// ends.
func (s *State) watchLedgers(ctx context.Context, w client.WithWatch) {
	for ctx.Err() == nil {
		if err := s.watchOnce(ctx, w); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).V(1).Info("watching the TenantLedgers again", "reason", err.Error())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *State) watchOnce(ctx context.Context, w client.WithWatch) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(TenantLedgerGVK.GroupVersion().WithKind(TenantLedgerGVK.Kind + "List"))
	wi, err := w.Watch(ctx, list)
	if err != nil {
		return fmt.Errorf("unable to watch %s objects: %w", TenantLedgerGVK.Kind, err)
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			s.observe(ctx, obj)
		case watch.Error:
			return fmt.Errorf("watch of %s objects: %v", TenantLedgerGVK.Kind, apierrors.FromObject(ev.Object))
		}
	}
	return errors.New("the watch ended")
}

// observe takes a watched version of a tree's TenantLedger into its
// mirror, and answers a reclaim it holds.
func (s *State) observe(ctx context.Context, obj *unstructured.Unstructured) {
	root := s.rootOfLedger(obj)
	if root == "" {
		return // a tree this replica never decided in: nothing of its own there
	}
	t := s.shared.tree(root)
	t.mu.Lock()
	if !t.writing && t.rv != obj.GetResourceVersion() && newerVersion(obj.GetResourceVersion(), t.rv) {
		if err := t.load(root, obj, s.ledger); err != nil {
			log.FromContext(ctx).Error(err, "unable to read a watched TenantLedger", "tree", root)
		}
	}
	at := s.reclaimToAnswer(t)
	t.mu.Unlock()
	if at.IsZero() {
		return
	}
	err := s.transactShared(ctx, root, func() (bool, error) {
		if !t.answered.Before(at) {
			return false, nil
		}
		g := s.shared.grants
		t.answered = at
		t.quiet = s.ledger.Now().Add(g.opts.Lease / 3)
		return s.ledger.AnswerReclaim(root, at, s.ledger.Now().Add(g.opts.Lease).Truncate(time.Second)), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.FromContext(ctx).Error(err, "unable to give back a quota grant", "tree", root)
		return
	}
	grantSpends.WithLabelValues(spendGivenBack).Inc()
}

// reclaimToAnswer is the latest reclaim of another holder in t newer than
// the last one answered (zero for none). Callers hold t.mu.
func (s *State) reclaimToAnswer(t *sharedTree) time.Time {
	var latest time.Time
	for holder, at := range t.reclaims {
		if holder != s.shared.grants.opts.Holder && at.After(t.answered) && at.After(latest) {
			latest = at
		}
	}
	return latest
}

// newerVersion says whether resourceVersion a is newer than b (etcd's are
// integers; anything else counts as newer).
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA != nil || errB != nil || x > y
}

// rootOfLedger is the root tenant whose tree a TenantLedger object holds
// (its tenant-tree label), among the trees this replica has decided in;
// "" for another.
func (s *State) rootOfLedger(obj *unstructured.Unstructured) string {
	label := obj.GetLabels()[treeLabel]
	root := ""
	s.shared.trees.Range(func(k, _ any) bool {
		if labelValue(k.(string)) == label {
			root = k.(string)
			return false
		}
		return true
	})
	return root
}

// treeLabel names a TenantLedger's tree (labelValue of its root).
const treeLabel = "mandate.dev/tenant-tree"

// reclaimMaxAge is how long a reclaim line stays in a TenantLedger: long
// past any holder's answer.
const reclaimMaxAge = time.Minute

// putGrants adds the grants and reclaim requests of a tree to a
// TenantLedger's spec (see the CRD's description of spec.grants and
// spec.reclaim).
func putGrants(spec map[string]any, gs []ledger.Grant, reclaims map[string]time.Time) error {
	var b strings.Builder
	for _, g := range gs {
		if strings.ContainsAny(g.Holder+g.Tenant, " \n") || g.Holder == "" || g.Tenant == "" {
			return fmt.Errorf("grant of holder %q to tenant %q cannot be stored: a name with a space", g.Holder, g.Tenant)
		}
		fmt.Fprintf(&b, "%s %s %d ", g.Holder, g.Tenant, g.Expires.Unix())
		for i, k := range slices.Sorted(maps.Keys(g.GPUs)) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%d/%d", k, g.GPUs[k].Total, g.GPUs[k].NonPreemptible)
		}
		if !g.Answered.IsZero() {
			fmt.Fprintf(&b, " answered=%d", g.Answered.UnixNano())
		}
		b.WriteByte('\n')
	}
	if b.Len() > 0 {
		spec["grants"] = b.String()
	}
	b.Reset()
	for _, holder := range slices.Sorted(maps.Keys(reclaims)) {
		at := reclaims[holder]
		if time.Since(at) > reclaimMaxAge || strings.ContainsAny(holder, " \n") {
			continue
		}
		fmt.Fprintf(&b, "%s %d\n", holder, at.UnixNano())
	}
	if b.Len() > 0 {
		spec["reclaim"] = b.String()
	}
	return nil
}

// grantsOf reads a TenantLedger's spec.grants and spec.reclaim.
func grantsOf(obj *unstructured.Unstructured) ([]ledger.Grant, map[string]time.Time, error) {
	text, _, err := unstructured.NestedString(obj.Object, "spec", "grants")
	if err != nil {
		return nil, nil, err
	}
	var gs []ledger.Grant
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		g, err := parseGrant(line)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.grants line %d %q: %w", n+1, line, err)
		}
		gs = append(gs, g)
	}
	text, _, err = unstructured.NestedString(obj.Object, "spec", "reclaim")
	if err != nil {
		return nil, nil, err
	}
	reclaims := map[string]time.Time{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		var nanos int64
		if len(f) == 2 {
			nanos, err = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) != 2 || err != nil {
			return nil, nil, fmt.Errorf("spec.reclaim line %d %q: want HOLDER UNIXNANOS", n+1, line)
		}
		reclaims[f[0]] = time.Unix(0, nanos)
	}
	return gs, reclaims, nil
}

// parseGrant reads one line of spec.grants:
// HOLDER TENANT EXPIRES KEY=TOTAL/NONPREEMPTIBLE[,...] [answered=UNIXNANOS].
func parseGrant(line string) (ledger.Grant, error) {
	f := strings.Fields(line)
	var answered time.Time
	if len(f) == 5 {
		v, ok := strings.CutPrefix(f[4], "answered=")
		nanos, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return ledger.Grant{}, fmt.Errorf("%q is not answered=UNIXNANOS", f[4])
		}
		answered, f = time.Unix(0, nanos), f[:4]
	}
	if len(f) != 4 {
		return ledger.Grant{}, errors.New("want HOLDER TENANT EXPIRES KEY=TOTAL/NONPREEMPTIBLE[,...] [answered=UNIXNANOS]")
	}
	expires, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return ledger.Grant{}, fmt.Errorf("expiry: %w", err)
	}
	g := ledger.Grant{Holder: f[0], Tenant: f[1], Expires: time.Unix(expires, 0), Answered: answered, GPUs: map[string]ledger.Usage{}}
	for _, kv := range strings.Split(f[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		total, np, ok2 := strings.Cut(v, "/")
		t, err1 := strconv.Atoi(total)
		n, err2 := strconv.Atoi(np)
		if !ok || !ok2 || k == "" || err1 != nil || err2 != nil || t < 0 || n < 0 || n > t {
			return ledger.Grant{}, fmt.Errorf("%q is not KEY=TOTAL/NONPREEMPTIBLE", kv)
		}
		g.GPUs[k] = ledger.Usage{Total: t, NonPreemptible: n}
	}
	return g, nil
}
