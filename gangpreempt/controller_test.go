package gangpreempt

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
)

// gangPod is a borrowed (preemptible) pod of 8 GPUs of owner's gang.
func gangPod(t *testing.T, name, owner string, gangMin int, node string, created time.Time) *corev1.Pod {
	t.Helper()
	return admittedPod(t, true, name, owner, gangMin, node, created)
}

func admittedPod(t *testing.T, preemptible bool, name, owner string, gangMin int, node string, created time.Time) *corev1.Pod {
	t.Helper()
	marks, err := scheduler.Marks(evaluator.Directives{PriorityClass: "build", Preemptible: preemptible, GangMin: gangMin})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gamma", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{scheduler.AnnotationDirectives: marks},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner, UID: types.UID(owner),
				Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}},
	}
}

// TestReconcileDeletesTheRestOfTheGang: of the preempted gang, the bound
// pods created before the mark go; the gang's replacement made after it,
// another gang's pods and a tenant's unmarked pod that only names the same
// owner stay.
func TestReconcileDeletesTheRestOfTheGang(t *testing.T) {
	mark := time.Now().Truncate(time.Second)
	before := mark.Add(-time.Minute)
	keep := []client.Object{
		gangPod(t, "replacement", "job-1", 4, "", mark.Add(time.Second)),
		gangPod(t, "other-gang", "job-2", 4, "node-1", before),
		gangPod(t, "single", "job-1", 0, "node-1", before),
	}
	unmarked := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "gamma", Name: "unmarked", CreationTimestamp: metav1.NewTime(before),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job-1", UID: "job-1", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1"}}
	keep = append(keep, unmarked)
	var gone []client.Object
	for _, n := range []string{"a", "b", "c", "d"} {
		gone = append(gone, gangPod(t, n, "job-1", 4, "node-1", before))
	}
	markVictim(gone[0].(*corev1.Pod), mark)
	c := fake.NewClientBuilder().WithObjects(append(append([]client.Object{}, keep...), gone...)...).Build()
	r := &Reconciler{Reader: c, Writer: c}
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range gone {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s of the preempted gang was not deleted: %v", o.GetName(), err)
		}
	}
	for _, o := range keep {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Pod{}); err != nil {
			t.Errorf("%s was deleted: %v", o.GetName(), err)
		}
	}
}

// markVictim gives p the DisruptionTarget condition kube-scheduler writes
// on its victim, at mark.
func markVictim(p *corev1.Pod, mark time.Time) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonPreemptionByScheduler, LastTransitionTime: metav1.NewTime(mark)}}
}

// TestReconcileKeepsAnElasticGangAboveItsMinimum: an elastic gang of 4
// with a minimum of 2 that loses one pod still runs 3 and keeps them;
// losing a third member (2 marked; the replacement made after the mark
// and a finished pod not counted) it runs 1, below its minimum, and goes
// whole.
func TestReconcileKeepsAnElasticGangAboveItsMinimum(t *testing.T) {
	mark := time.Now().Truncate(time.Second)
	before := mark.Add(-time.Minute)
	var members []*corev1.Pod
	for _, n := range []string{"a", "b", "c", "d"} {
		members = append(members, gangPod(t, n, "job-1", 2, "node-1", before))
	}
	markVictim(members[0], mark)
	finished := gangPod(t, "finished", "job-1", 2, "node-1", before)
	finished.Status.Phase = corev1.PodSucceeded
	objs := []client.Object{gangPod(t, "replacement", "job-1", 2, "node-2", mark.Add(time.Second)), finished}
	for _, p := range members {
		objs = append(objs, p)
	}
	c := fake.NewClientBuilder().WithObjects(objs...).Build()
	r := &Reconciler{Reader: c, Writer: c}
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Pod{}); err != nil {
			t.Errorf("%s of a gang still at 3 of its minimum 2 was deleted: %v", o.GetName(), err)
		}
	}

	for _, p := range members[1:3] {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		markVictim(got, mark)
		if err := c.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, p := range members {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s of a gang below its minimum was not deleted: %v", p.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(objs[0]), &corev1.Pod{}); err != nil {
		t.Errorf("the replacement made after the mark was deleted: %v", err)
	}
}

// TestReconcileKeepsAGuardedGang: a guaranteed gang's pod whose mark
// passed while the eviction guard did not answer (failurePolicy Ignore),
// but whose DELETE the guard refused, still runs: its gang is whole and
// keeps its pods. Had the DELETE passed (the pod is going), the gang is
// broken and goes whole.
func TestReconcileKeepsAGuardedGang(t *testing.T) {
	mark := time.Now().Truncate(time.Second)
	var members []client.Object
	for _, n := range []string{"a", "b", "c", "d"} {
		members = append(members, admittedPod(t, false, n, "job-1", 4, "node-1", mark.Add(-time.Minute)))
	}
	victim := members[0].(*corev1.Pod)
	markVictim(victim, mark)
	c := fake.NewClientBuilder().WithObjects(members...).Build()
	r := &Reconciler{Reader: c, Writer: c}
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, o := range members {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Pod{}); err != nil {
			t.Errorf("%s of a gang the guard kept whole was deleted: %v", o.GetName(), err)
		}
	}

	// The DELETE passed after all: the victim is going.
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(victim), got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = []string{"test/keep"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, o := range members[1:] {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s of a gang whose victim is going was not deleted: %v", o.GetName(), err)
		}
	}
}

// TestEnqueueOnTheMark: only the update that marks a gang pod asks for its
// gang (keyed by the owner and the mark's second); a pod marked already, a
// pod of no gang and an unmarked pod ask for nothing.
func TestEnqueueOnTheMark(t *testing.T) {
	mark := time.Now().Truncate(time.Second)
	facts := func(p *corev1.Pod, marked bool) *cluster.PodFacts {
		if marked {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: corev1.PodReasonPreemptionByScheduler, LastTransitionTime: metav1.NewTime(mark)}}
		}
		return cluster.CompactPod(p)
	}
	going := func(f *cluster.PodFacts) *cluster.PodFacts {
		now := metav1.Now()
		f.DeletionTimestamp = &now
		return f
	}
	member := func() *corev1.Pod { return gangPod(t, "a", "job-1", 4, "node-1", mark.Add(-time.Minute)) }
	single := func() *corev1.Pod { return gangPod(t, "s", "job-1", 0, "node-1", mark.Add(-time.Minute)) }
	for _, tc := range []struct {
		name     string
		old, cur client.Object
		want     []reconcile.Request
	}{
		{"marked now", facts(member(), false), facts(member(), true),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}}},
		{"seen marked at start", nil, facts(member(), true),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}}},
		{"marked before", facts(member(), true), facts(member(), true), nil},
		{"marked before, going now", facts(member(), true), going(facts(member(), true)),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "gamma", Name: key("job-1", mark)}}}},
		{"marked and going before", going(facts(member(), true)), going(facts(member(), true)), nil},
		{"not marked", facts(member(), false), facts(member(), false), nil},
		{"no gang", facts(single(), false), facts(single(), true), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			enqueue(q, tc.old, tc.cur)
			var got []reconcile.Request
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r)
				q.Done(r)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("enqueued %v, want %v", got, tc.want)
			}
		})
	}
}
