package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// target is one system under load.
type target struct {
	name string
	// urls are the admission endpoints of the system's replicas: each
	// connection goes to the next one, as a Service's kube-proxy picks a
	// backend per connection.
	urls []string
	pids []int // the server processes whose CPU is counted
	next *atomic.Uint32
	// deniedDims are the dimensions the system checks (nil: all): an
	// example denied on another dimension is expected admitted.
	deniedDims []string
	client     *http.Client
}

// newClient is a keep-alive HTTPS client (HTTP/1.1) trusting ca, for the
// readiness checks; its TLS configuration is the workers' (newRawConn).
func newClient(ca []byte, conns int) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("unable to parse the serving CA")
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     5 * time.Minute,
	}
	// A generous per-request deadline: it bounds how long a wedged server
	// holds a worker, it is not what the bench measures.
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// verdict is a parsed AdmissionReview response.
type verdict struct {
	allowed bool
	message string
}

// parseReview checks body is an AdmissionReview answering uid and returns
// its verdict.
func parseReview(body []byte, uid string) (verdict, error) {
	var r struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Status  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return verdict{}, fmt.Errorf("not JSON: %w", err)
	}
	if r.Kind != "AdmissionReview" || r.Response == nil {
		return verdict{}, fmt.Errorf("not an AdmissionReview response (kind %q)", r.Kind)
	}
	if r.Response.UID != uid {
		return verdict{}, fmt.Errorf("answers uid %q, not %q", r.Response.UID, uid)
	}
	v := verdict{allowed: r.Response.Allowed}
	if st := r.Response.Status; st != nil {
		v.message = st.Message
		if !v.allowed && st.Code >= http.StatusInternalServerError {
			// Not a verdict: the system failed to decide (a deadline on a
			// busy machine, say), which the API server treats as its
			// failurePolicy says. Counted as an error, not as wrong.
			return verdict{}, &reviewError{code: st.Code, message: truncate(st.Message, 200)}
		}
	}
	return v, nil
}

// cell is one measurement: a system at a concurrency for a while.
type cell struct {
	system      string
	concurrency int
	round       int
	elapsed     time.Duration
	ok          int // 200 with a valid AdmissionReview and the expected verdict
	wrong       int // valid AdmissionReview, unexpected verdict
	errors      int // anything else (status, transport, malformed)
	latencies   []time.Duration
	serverCPU   time.Duration // utime+stime of the server process
	loadgenCPU  time.Duration // utime+stime of this process
	firstError  string
	firstWrong  string
	errorCounts map[string]int
	// ledger is what the replicas of a system with the shared ledger did
	// during the cell (their metrics' difference), nil for the others.
	ledger *ledgerCounts
}

func (c *cell) rate() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.ok+c.wrong) / c.elapsed.Seconds()
}

// percentile of the sorted latencies.
func (c *cell) percentile(q float64) time.Duration {
	if len(c.latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(c.latencies))+0.5) - 1
	return c.latencies[max(0, min(i, len(c.latencies)-1))]
}

func (c *cell) cpuPerReview(cpu time.Duration) time.Duration {
	n := c.ok + c.wrong
	if n == 0 {
		return 0
	}
	return cpu / time.Duration(n)
}

// measure runs concurrency workers POSTing the examples round-robin to t
// for d after a short unmeasured warm-up (connections opened, caches warm).
func measure(ctx context.Context, t target, examples []example, concurrency int, d time.Duration) (*cell, error) {
	warm := min(time.Second, d/5)
	if _, err := drive(ctx, t, examples, concurrency, warm, 0); err != nil {
		return nil, err
	}
	return drive(ctx, t, examples, concurrency, d, 0)
}

// drive runs the workers for d, or, when perWorker > 0, until each has
// sent perWorker requests (d is then ignored).
func drive(ctx context.Context, t target, examples []example, concurrency int, d time.Duration, perWorker int) (*cell, error) {
	c := &cell{system: t.name, concurrency: concurrency, errorCounts: map[string]int{}}
	srvBefore, err := processesCPU(t.pids)
	if err != nil {
		return nil, err
	}
	selfBefore, err := processCPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	if perWorker <= 0 {
		timer := time.AfterFunc(d, func() { stop.Store(true) })
		defer timer.Stop()
	}
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			var ok, wrong, errs int
			var firstErr, firstWrong string
			errCounts := map[string]int{}
			conn, err := newRawConn(t)
			if err != nil {
				mu.Lock()
				c.errors++
				c.firstError = err.Error()
				mu.Unlock()
				return
			}
			defer conn.close()
			for i := w; !stop.Load() && ctx.Err() == nil && (perWorker <= 0 || i < w+perWorker); i++ {
				e := examples[i%len(examples)]
				body, uid := e.next()
				t0 := time.Now()
				v, err := post(ctx, conn, body, uid)
				elapsed := time.Since(t0)
				switch {
				case err != nil:
					if stop.Load() || ctx.Err() != nil {
						continue // cut off by the end of the cell
					}
					errs++
					errCounts[errorClass(err)]++
					if firstErr == "" {
						firstErr = fmt.Sprintf("%s: %v", e.file, err)
					}
				case v.allowed == e.expectedDenied(t.deniedDims):
					wrong++
					lat = append(lat, elapsed)
					if firstWrong == "" {
						firstWrong = fmt.Sprintf("%s: allowed=%v, expected %s (%s)", e.file, v.allowed, expectation(e, t.deniedDims), v.message)
					}
				default:
					ok++
					lat = append(lat, elapsed)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			c.ok += ok
			c.wrong += wrong
			c.errors += errs
			c.latencies = append(c.latencies, lat...)
			if c.firstError == "" {
				c.firstError = firstErr
			}
			if c.firstWrong == "" {
				c.firstWrong = firstWrong
			}
			for k, n := range errCounts {
				c.errorCounts[k] += n
			}
		}()
	}
	wg.Wait()
	c.elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	srvAfter, err := processesCPU(t.pids)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	selfAfter, err := processCPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	c.serverCPU, c.loadgenCPU = srvAfter-srvBefore, selfAfter-selfBefore
	sort.Slice(c.latencies, func(i, j int) bool { return c.latencies[i] < c.latencies[j] })
	return c, nil
}

func expectation(e example, dims []string) string {
	if e.expectedDenied(dims) {
		return "denied"
	}
	return "admitted"
}

// statusError is a response other than 200.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

func post(ctx context.Context, c *rawConn, body []byte, uid string) (verdict, error) {
	code, raw, err := c.post(ctx, body)
	if err != nil {
		return verdict{}, err
	}
	if code != http.StatusOK {
		return verdict{}, &statusError{code: code, body: truncate(string(raw), 200)}
	}
	return parseReview(raw, uid)
}

// reviewError is an AdmissionReview whose response is a failure to decide
// (status code 5xx), not a verdict.
type reviewError struct {
	code    int
	message string
}

func (e *reviewError) Error() string { return fmt.Sprintf("review answered %d: %s", e.code, e.message) }

// errorClass groups errors for the report: the HTTP status, or the kind
// of failure.
func errorClass(err error) string {
	var se *statusError
	var re *reviewError
	switch {
	case errors.As(err, &se):
		return "HTTP " + strconv.Itoa(se.code)
	case errors.As(err, &re):
		return "review " + strconv.Itoa(re.code)
	case isTimeout(err):
		return "timeout"
	case strings.Contains(err.Error(), "AdmissionReview") || strings.Contains(err.Error(), "JSON") || strings.Contains(err.Error(), "uid"):
		return "malformed"
	default:
		return "transport"
	}
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's utime and stime: 100
// on every Linux architecture Go supports.
const clockTick = 100

// processesCPU is the CPU time the processes have used together.
func processesCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := processCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// endpoint is the URL the next connection goes to, round-robin over the
// replicas.
func (t target) endpoint() string {
	if len(t.urls) == 1 || t.next == nil {
		return t.urls[0]
	}
	return t.urls[int(t.next.Add(1)-1)%len(t.urls)]
}

// replica is the target of the i-th replica alone.
func (t target) replica(i int) target {
	r := t
	r.urls, r.next = t.urls[i:i+1], nil
	if i < len(t.pids) {
		r.pids = t.pids[i : i+1]
	}
	return r
}

// processCPU is the user+system CPU time pid has used, from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("unable to read the CPU time of process %d: %w", pid, err)
	}
	return parseStatCPU(string(raw))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line; the command name (field 2) may hold spaces and parentheses, so the
// fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", truncate(stat, 80))
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line %q", truncate(stat, 80))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("malformed /proc stat line: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTick, nil
}
