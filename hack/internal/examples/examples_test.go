package examples

import "testing"

func TestExpectationOf(t *testing.T) {
	for file, want := range map[string]Expectation{
		"01-notebook-admitted.yaml":           {},
		"04-llm-finetune-waits.yaml":          {},
		"07-platform-quota-denied.yaml":       {Denied: true, Dimension: "quota"},
		"09-scratch-tenancy-denied.yaml":      {Denied: true, Dimension: "tenancy"},
		"10-something-denied.yaml":            {Denied: true},
		"08-llm-pretrain-topology-denied.yml": {},
	} {
		if got := ExpectationOf(file); got != want {
			t.Errorf("ExpectationOf(%q) = %+v, want %+v", file, got, want)
		}
	}
}

// TestLoadWorkloads: every example of the repository loads, in name order,
// with the expectation of its name.
func TestLoadWorkloads(t *testing.T) {
	ws, err := LoadWorkloads("../../../examples/workloads")
	if err != nil {
		t.Fatal(err)
	}
	denied := 0
	for i, w := range ws {
		if i > 0 && ws[i-1].File > w.File {
			t.Errorf("%s after %s: not in name order", w.File, ws[i-1].File)
		}
		if w.Expected != ExpectationOf(w.File) || w.Object.GetKind() == "" {
			t.Errorf("%s: %+v, kind %q", w.File, w.Expected, w.Object.GetKind())
		}
		if w.Expected.Denied {
			denied++
		}
	}
	if len(ws) < 9 || denied < 4 {
		t.Errorf("%d workloads, %d denied: want at least the 9 examples, 4 of them denied", len(ws), denied)
	}
	if _, err := LoadWorkloads(t.TempDir()); err == nil {
		t.Error("an empty directory loaded without an error")
	}
}
