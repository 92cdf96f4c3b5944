package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"

	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/buildinfo"
	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestServeReportsItsBuild runs `mandate serve` against a real API server:
// it logs its build once at startup, as one structured line; /metrics
// carries mandate_build_info{version,commit,go_version,opa_version} 1; and
// `mandate bundle status` shows when the policy was loaded as a real
// RFC 3339 time, in the table and in JSON.
func TestServeReportsItsBuild(t *testing.T) {
	env := envtest.Start(t)
	kubeconfig := env.WriteKubeconfig(t, "mandate-serve")
	certDir := t.TempDir()
	now := time.Now()
	ca, err := certs.NewCA("mandate-test", now, time.Hour)
	require.NoError(t, err)
	serving, err := certs.IssueServing(ca, []string{"127.0.0.1"}, now, time.Hour)
	require.NoError(t, err)
	require.NoError(t, certs.WriteFiles(certDir, serving))
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)

	started := time.Now().Truncate(time.Second)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(logs)
	root.SetArgs([]string{"serve", "--kubeconfig", kubeconfig, "--cert-dir", certDir, "--host", "127.0.0.1", "--port", port,
		"--metrics-addr", metricsAddr, "--health-addr", healthAddr})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "serve stops cleanly")
		case <-time.After(envtest.Timeout(time.Minute)):
			t.Error("serve did not stop")
		}
	}()

	var families map[string]*dto.MetricFamily
	envtest.WaitFor(t, 2*time.Minute, "serve's /metrics", func() bool {
		select {
		case err := <-done:
			require.FailNow(t, "serve exited", "%v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err = p.TextToMetricFamilies(resp.Body)
		require.NoError(t, err)
		return true
	})

	info := buildinfo.Get()
	mf := families[buildinfo.MetricName]
	require.NotNil(t, mf, "%s on /metrics", buildinfo.MetricName)
	require.Len(t, mf.GetMetric(), 1)
	labels := map[string]string{}
	for _, lp := range mf.GetMetric()[0].GetLabel() {
		labels[lp.GetName()] = lp.GetValue()
	}
	assert.Equal(t, map[string]string{"version": info.Version, "commit": info.Commit, "go_version": info.GoVersion, "opa_version": info.OPAVersion}, labels)
	assert.Equal(t, 1.0, mf.GetMetric()[0].GetGauge().GetValue())
	assert.NotEmpty(t, info.OPAVersion)

	var startLines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l["msg"] == "starting mandate serve" {
			startLines = append(startLines, l)
		}
	}
	require.Len(t, startLines, 1, "one startup line:\n%s", logs.String())
	for k, want := range map[string]string{"version": info.Version, "commit": info.Commit, "buildDate": info.BuildDate,
		"goVersion": info.GoVersion, "opaVersion": info.OPAVersion} {
		assert.Equal(t, want, startLines[0][k], k)
	}

	code, out, errText := run(t, "bundle", "status", "--addr", metricsAddr)
	require.Equal(t, 0, code, errText)
	m := regexp.MustCompile(`(?m)^Activated: +(\S+) \(`).FindStringSubmatch(out)
	require.NotNil(t, m, "an Activated line:\n%s", out)
	activated, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)
	assert.False(t, activated.Before(started) || activated.After(time.Now()), "activated %s, serve started %s", activated, started)
	code, out, errText = run(t, "bundle", "status", "--addr", metricsAddr, "-o", "json")
	require.Equal(t, 0, code, errText)
	var st bundles.ServingStatus
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.False(t, st.Active.ActivatedAt.Before(started), "activatedAt %s", st.Active.ActivatedAt)
}

// freeAddr is a 127.0.0.1 address nothing listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer serve may write while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
