package webhook

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/mandate-dev/mandate/test/reviewtest"
)

// TestValidatorGuardsOwnedKeysOnUpdate: on a workload Mandate admitted, an
// UPDATE may change anything but Mandate's keys — its marks and the
// scheduler keys its adapters wrote; on one it never admitted, nothing is
// guarded. Nothing is decided again either way.
func TestValidatorGuardsOwnedKeysOnUpdate(t *testing.T) {
	r, rec := reviewtest.Service(t)
	v := &Validator{Reviewer: r}
	pod := func(labels, annotations string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: vision\n  labels: {" + labels + "}\n  annotations: {" + annotations + "}\n" +
			"spec:\n  containers: [{name: c, image: x}]\n"
	}
	const admitted = `mandate.dev/directives: '{"scheduler":"kai","preemptible":false}'`
	for _, tc := range []struct {
		name, old, new string
		wantAllowed    bool
		wantKeys       []string
	}{
		{name: "relabelled preemptible", old: pod("kai.scheduler/preemptibility: non-preemptible, mandate.dev/preemptible: 'false'", admitted),
			new:      pod("kai.scheduler/preemptibility: preemptible, mandate.dev/preemptible: 'true'", admitted),
			wantKeys: []string{"label kai.scheduler/preemptibility", "label mandate.dev/preemptible"}},
		{name: "queue removed", old: pod("kai.scheduler/queue: research", admitted), new: pod("", admitted),
			wantKeys: []string{"label kai.scheduler/queue"}},
		{name: "directives forged", old: pod("", admitted), new: pod("", `mandate.dev/directives: '{"scheduler":"kai","preemptible":true}'`),
			wantKeys: []string{"annotation mandate.dev/directives"}},
		{name: "another label", old: pod("kai.scheduler/queue: research", admitted), new: pod("kai.scheduler/queue: research, team: x", admitted), wantAllowed: true},
		{name: "never admitted by Mandate", old: pod("kai.scheduler/preemptibility: non-preemptible", ""),
			new: pod("kai.scheduler/preemptibility: preemptible", ""), wantAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rec.Calls()
			resp := v.Handle(context.Background(), admissionRequest(t, admissionv1.Update, tc.new, tc.old, "alice", "vision-devs"))
			assert.Equal(t, before, rec.Calls(), "an update is not decided again")
			assert.Equal(t, tc.wantAllowed, resp.Allowed, "result: %+v", resp.Result)
			if tc.wantAllowed {
				return
			}
			assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
			for _, k := range tc.wantKeys {
				assert.Contains(t, resp.Result.Message, k)
			}
			assert.Contains(t, resp.Result.Message, "delete and create the workload again")
		})
	}
}
