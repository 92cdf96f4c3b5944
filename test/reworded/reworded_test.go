// Package reworded shows that explain, the cluster report and the
// authority gauges read the decision's data, never its text: with every
// message the policies emit reworded, their output is the same.
package reworded

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/policies"
)

// libRego is the policy file where every violation and warning gets its
// message (mandate.lib.violation and mandate.lib.reason).
const libRego = "mandate/lib/lib.rego"

// rendered is how lib.violation and lib.reason put the message on a
// violation; reworded is the same with every message written backwards:
// nothing a parser could look for survives (not a phrase, a number or a
// parenthesis), while every fact stays as it was.
const (
	rendered = `"message": message`
	reworded = `"message": strings.reverse(message)`
)

// rewordedPolicies is the default policy tree with every message reworded.
func rewordedPolicies(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, path)
		if err != nil {
			return err
		}
		if path == libRego {
			require.Equal(t, 2, strings.Count(string(b), rendered), "lib.violation and lib.reason render the message")
			b = []byte(strings.ReplaceAll(string(b), rendered, reworded))
		}
		out[path] = &fstest.MapFile{Data: b}
		return nil
	}))
	return out
}

// TestEveryMessageIsRenderedInOnePlace: no policy builds a violation or a
// warning but through mandate.lib.violation, so rewording it there rewords
// every message the policies can emit.
func TestEveryMessageIsRenderedInOnePlace(t *testing.T) {
	require.NoError(t, fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".rego") || strings.HasSuffix(path, "_test.rego") || path == libRego {
			return err
		}
		b, err := fs.ReadFile(policies.FS, path)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(b), `"message"`, "%s builds a message of its own", path)
		return nil
	}))
}

// rewordFixture is explain's fixture (the example cluster, pending
// workloads of each blocking kind, the schedulers' queues) and the
// workloads of the rules it lacks (testdata/workloads.yaml).
var rewordFixture = []string{"../../examples/cluster.yaml", "../../explain/testdata/pending.yaml",
	"../../explain/testdata/fragmented.yaml", "../../explain/testdata/queues.yaml", "testdata/workloads.yaml"}

// outputs are what explain, the report and the gauges make of the fixture
// under one policy tree.
type outputs struct {
	audit   *audit.Report
	explain []*explain.Explanation
	report  *clusterreport.Report
	gauges  string
}

func outputsOf(t *testing.T, tree fs.FS, revision string) outputs {
	t.Helper()
	var all bytes.Buffer
	for _, f := range rewordFixture {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all.Write(b)
		all.WriteString("\n---\n")
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	require.NoError(t, os.WriteFile(path, all.Bytes(), 0o600))
	read := func() (*inventory.Inventory, *explain.SchedulerState) {
		inv, err := inventory.ReadSnapshot(path)
		require.NoError(t, err)
		inv.Source = "fixture"
		sched, err := explain.ReadSchedulerState(bytes.NewReader(all.Bytes()))
		require.NoError(t, err)
		return inv, sched
	}
	p, err := evaluator.LoadFS(tree, revision)
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	o := explain.Options{Decider: ev, Model: ev.Model(), Revision: "fixture"}
	var out outputs

	inv, _ := read()
	out.audit, err = audit.Audit(context.Background(), inv, audit.Options{Decider: ev, Model: ev.Model(), Revision: "fixture", Explain: true})
	require.NoError(t, err)
	inv, sched := read()
	out.explain, err = explain.All(context.Background(), inv, sched, o)
	require.NoError(t, err)
	inv, sched = read()
	out.report, err = clusterreport.Build(context.Background(), inv, sched, clusterreport.Options{Options: o})
	require.NoError(t, err)

	authoritymetrics.Publish(out.report, float64(time.Unix(1700000000, 0).Unix()))
	reg := prometheus.NewRegistry()
	reg.MustRegister(authoritymetrics.Collectors...)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var gauges bytes.Buffer
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&gauges, mf)
		require.NoError(t, err)
	}
	out.gauges = gauges.String()
	return out
}

// TestRewordedMessagesChangeNoReader: with every message the policies emit
// reworded, every violation and warning keeps its code and facts, and
// explain (blocks, limits, current values, the changes that unblock), the
// cluster report and the authority gauges come out the same: they read
// the data, never the text, which they only show.
func TestRewordedMessagesChangeNoReader(t *testing.T) {
	plain := outputsOf(t, policies.FS, "plain")
	changed := outputsOf(t, rewordedPolicies(t), "reworded")

	// Every message changed; nothing else about the decisions did.
	codes := map[string]bool{}
	require.Len(t, changed.audit.Workloads, len(plain.audit.Workloads))
	for i, p := range plain.audit.Workloads {
		c := changed.audit.Workloads[i]
		require.Equal(t, p.Workload, c.Workload)
		for _, list := range [][2][]evaluator.Violation{{p.Violations, c.Violations}, {p.Warned, c.Warned}, {p.DryRun, c.DryRun}, {p.Reasons, c.Reasons}} {
			require.Len(t, list[1], len(list[0]), "%s", p.Workload)
			for j, v := range list[0] {
				w := list[1][j]
				codes[v.Code] = true
				assert.NotEqual(t, v.Message, w.Message, "%s %s: the message is reworded", p.Workload, v.Code)
				if v.Warning != "" {
					assert.NotEqual(t, v.Warning, w.Warning, "%s %s: the warning is reworded", p.Workload, v.Code)
				}
				v.Message, w.Message, v.Warning, w.Warning = "", "", "", ""
				assert.Equal(t, v, w, "%s: the same reason, facts and all", p.Workload)
			}
		}
		assert.Len(t, c.Warnings, len(p.Warnings), "%s", p.Workload)
		for _, w := range p.Warnings {
			assert.NotContains(t, c.Warnings, w, "%s: every warning is reworded", p.Workload)
		}
	}
	for _, code := range []string{
		"QUOTA_CEILING_BUSY", "QUOTA_EXCEEDS_CEILING", "QUOTA_TURNED_PREEMPTIBLE", "TOPOLOGY_WAITS", "TOPOLOGY_NEVER_FITS",
		"PRIORITY_NOT_ALLOWED", "PRIORITY_UNKNOWN", "TENANT_UNKNOWN", "PREEMPTION_SELF_EXEMPT", "SCHEDULER_KEY_OVERRIDDEN",
	} {
		assert.True(t, codes[code], "the fixture exercises %s", code)
	}

	// explain: the same blocks, numbers and changes; only the messages
	// it shows differ.
	require.Len(t, changed.explain, len(plain.explain))
	for i, p := range plain.explain {
		if !assert.Equal(t, withoutText(t, p), withoutText(t, changed.explain[i]), "explain %s", p.Workload) {
			continue
		}
		for j, b := range p.Blocks {
			if b.Dimension != "scheduler" {
				assert.NotEqual(t, b.Message, changed.explain[i].Blocks[j].Message, "explain %s shows the reworded message", p.Workload)
			}
		}
	}

	// The report: the same rows and numbers but the messages.
	for _, r := range []*clusterreport.Report{plain.report, changed.report} {
		r.Revision = ""
		for i := range r.Blocked {
			r.Blocked[i].Message = ""
		}
	}
	assert.Equal(t, plain.report, changed.report)
	assert.NotEmpty(t, plain.report.Blocked)

	// The gauges: the same series with the same values.
	assert.Equal(t, plain.gauges, changed.gauges)
	assert.Contains(t, plain.gauges, `mandate_blocked_gpus{dimension="quota"}`)
}

// withoutText is an explanation as JSON with the decision's text left out:
// each block's message and the warnings (their number stays).
func withoutText(t *testing.T, e *explain.Explanation) string {
	t.Helper()
	c := *e
	c.Revision = ""
	c.Blocks = slices.Clone(e.Blocks)
	for i := range c.Blocks {
		if c.Blocks[i].Dimension != "scheduler" {
			c.Blocks[i].Message = ""
		}
	}
	c.Warnings = make([]string, len(e.Warnings))
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}
