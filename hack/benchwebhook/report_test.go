package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testCell(system string, conc, round int, ok int, elapsed time.Duration, lat ...time.Duration) *cell {
	return &cell{system: system, concurrency: conc, round: round, ok: ok, elapsed: elapsed, latencies: lat,
		serverCPU: time.Duration(ok) * time.Millisecond, loadgenCPU: time.Duration(ok) * 100 * time.Microsecond,
		errorCounts: map[string]int{}}
}

// TestRatiosPrintNumbersWithX: the ratios are of median reviews/s over the
// rounds, per concurrency, printed as a number followed by x.
func TestRatiosPrintNumbersWithX(t *testing.T) {
	sec := time.Second
	cells := []*cell{
		testCell(sysMandate, 8, 1, 1400, sec), testCell(sysMandate, 8, 2, 1500, sec), testCell(sysMandate, 8, 3, 9000, sec),
		testCell(sysOPA, 8, 1, 1000, sec), testCell(sysOPA, 8, 2, 1000, sec), testCell(sysOPA, 8, 3, 1000, sec),
		testCell(sysGatekeeper, 8, 1, 300, sec),
		testCell(sysGatekeeperLight, 8, 1, 750, sec),
		testCell(sysIndependent, 8, 1, 3000, sec),
		testCell(sysMandate, 32, 1, 700, sec), testCell(sysOPA, 32, 1, 0, sec),
	}
	sums := summarize(cells, allSystems, []int{8, 32})
	lines := ratios(sums, []int{8, 32})
	require.Equal(t, []string{
		"c=8  mandate/opa 1.50x  mandate/gatekeeper 5.00x  mandate/gatekeeper-light 2.00x  one-tree/independent 0.50x",
		"c=32  mandate/opa n/a (no opa reviews)",
	}, lines)
}

func TestSummaryRangesAndCPU(t *testing.T) {
	cells := []*cell{
		testCell(sysMandate, 8, 1, 1000, time.Second, time.Millisecond, 2*time.Millisecond, 9*time.Millisecond),
		testCell(sysMandate, 8, 2, 2000, time.Second, time.Millisecond),
	}
	cells[1].errors, cells[1].errorCounts["HTTP 429"] = 3, 3
	var out bytes.Buffer
	printSummary(&out, summarize(cells, []string{sysMandate}, []int{8}))
	s := out.String()
	require.Contains(t, s, "mandate /mutate (one tree)")
	require.Contains(t, s, "1000–2000 (1500)")
	require.Contains(t, s, "  1.00  ", "server CPU per review: 1 ms of CPU per review")
	require.Contains(t, s, "3 (HTTP 429: 3)")
	require.Contains(t, s, "  9.00  ", "the max latency")
}

func TestPercentiles(t *testing.T) {
	c := &cell{}
	for i := 1; i <= 100; i++ {
		c.latencies = append(c.latencies, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, c.percentile(0.50))
	require.Equal(t, 99*time.Millisecond, c.percentile(0.99))
	require.Equal(t, 100*time.Millisecond, c.percentile(1))
	require.Equal(t, time.Duration(0), (&cell{}).percentile(0.99))
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 150, stime 50 ticks.
	line := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 8 0 1000 1000000 500"
	d, err := parseStatCPU(line)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, d)
	_, err = parseStatCPU("garbage")
	require.Error(t, err)
	self, err := processCPU(0)
	require.Error(t, err, "no process 0 in /proc: %v", self)
}

func TestParseReview(t *testing.T) {
	v, err := parseReview([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u1","allowed":false,"status":{"message":"no"}}}`), "u1")
	require.NoError(t, err)
	require.Equal(t, verdict{allowed: false, message: "no"}, v)
	_, err = parseReview([]byte(`{"kind":"AdmissionReview","response":{"uid":"u2","allowed":true}}`), "u1")
	require.ErrorContains(t, err, "uid")
	_, err = parseReview([]byte(`{"kind":"Status"}`), "u1")
	require.Error(t, err)
	_, err = parseReview([]byte(`<html>`), "u1")
	require.Error(t, err)
}

func TestParseConfig(t *testing.T) {
	env := map[string]string{"BENCH_SECONDS": "3", "BENCH_ROUNDS": "1", "BENCH_CONCURRENCY": "4, 16"}
	c, err := parseConfig(nil, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, c.seconds)
	require.Equal(t, 1, c.rounds)
	require.Equal(t, []int{4, 16}, c.concurrency)
	require.Equal(t, allSystems, c.systems)
	// Flags win over the environment.
	c, err = parseConfig([]string{"-seconds", "0.5", "-systems", "opa"}, func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 500*time.Millisecond, c.seconds)
	require.Equal(t, []string{sysOPA}, c.systems)
	for _, bad := range [][]string{{"-systems", "kyverno"}, {"-concurrency", "0"}, {"-rounds", "0"}, {"extra"}} {
		_, err := parseConfig(bad, func(string) string { return "" })
		require.Error(t, err, "%v", bad)
	}
}

// TestExampleBodies: every example becomes a CREATE AdmissionReview of its
// object, each request with a uid and an object name no other request
// carries (in the request and in the object alike), and the verdicts
// expected of a system follow the dimensions it checks.
func TestExampleBodies(t *testing.T) {
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, e := range examples {
		for range 3 {
			var r struct {
				Request struct {
					UID       string `json:"uid"`
					Name      string `json:"name"`
					Operation string `json:"operation"`
					Namespace string `json:"namespace"`
					Object    struct {
						Metadata struct {
							Name      string `json:"name"`
							Namespace string `json:"namespace"`
						} `json:"metadata"`
					} `json:"object"`
				} `json:"request"`
			}
			body, uid := e.next()
			require.NoError(t, json.Unmarshal(body, &r), e.file)
			require.Equal(t, uid, r.Request.UID)
			require.Equal(t, "CREATE", r.Request.Operation)
			require.Equal(t, e.obj.GetNamespace(), r.Request.Namespace)
			require.Equal(t, e.obj.GetNamespace(), r.Request.Object.Metadata.Namespace)
			require.Equal(t, r.Request.Name, r.Request.Object.Metadata.Name, e.file)
			require.True(t, strings.HasPrefix(r.Request.Name, e.obj.GetName()+"-"), "%s: %s", e.file, r.Request.Name)
			require.Len(t, r.Request.Name, len(e.obj.GetName())+11, "a fixed-width sequence number")
			require.False(t, seen[r.Request.Name], "%s repeated", r.Request.Name)
			require.False(t, seen[uid], "uid %s repeated", uid)
			seen[r.Request.Name], seen[uid] = true, true
		}
		if e.denied {
			require.NotEmpty(t, e.dimension, e.file)
			require.True(t, e.expectedDenied(nil))
		}
		require.Equal(t, e.denied && (e.dimension == "tenancy" || e.dimension == "priority"),
			e.expectedDenied([]string{"tenancy", "priority"}), e.file)
	}
}
