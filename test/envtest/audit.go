package envtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// AuditPolicy is the audit policy WithAuditLog gives the API server: every
// create of a kind Mandate governs (pods, batch Jobs, Kubeflow PyTorchJobs,
// Volcano Jobs) at Metadata level, which carries the admission webhooks'
// audit annotations, past the RequestReceived stage; nothing else.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources:
  - {group: "", resources: [pods]}
  - {group: batch, resources: [jobs]}
  - {group: kubeflow.org, resources: [pytorchjobs]}
  - {group: batch.volcano.sh, resources: [jobs]}
- level: None
`

const auditLogName = "audit.log"

// WithAuditLog turns on the API server's audit log under AuditPolicy, in a
// temporary directory of the Env's own (removed when it stops). Env.AuditLog
// is the log's path; Env.AuditedCreates reads it.
func WithAuditLog() Option {
	return func(o *options) { o.auditLog = true }
}

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type AuditEvent struct {
	Verb       string `json:"verb"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	ObjectRef  struct {
		APIGroup  string `json:"apiGroup"`
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Annotations hold the admission webhooks' audit annotations, keyed
	// "<webhook name>/<key>".
	Annotations map[string]string `json:"annotations"`
}

// AuditedCreates reads the audit log and returns its completed creates
// (verb create, stage ResponseComplete), in the order they were logged. The
// API server writes the log as requests complete: a test that waits for an
// event reads again until it is there. No log yet (nothing audited) is no
// events; a line still being written is left for the next read.
func (e *Env) AuditedCreates() ([]AuditEvent, error) {
	if e.AuditLog == "" {
		return nil, errors.New("the API server keeps no audit log: start the Env WithAuditLog")
	}
	raw, err := os.ReadFile(e.AuditLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read the audit log: %w", err)
	}
	if i := bytes.LastIndexByte(raw, '\n'); i < len(raw)-1 {
		raw = raw[:i+1]
	}
	var out []AuditEvent
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log %s, line %d: %w", e.AuditLog, line, err)
		}
		if ev.Verb == "create" && ev.Stage == "ResponseComplete" {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("unable to read the audit log %s: %w", e.AuditLog, err)
	}
	return out, nil
}

// auditLogDir writes AuditPolicy into a new temporary directory and returns
// it, with the kube-apiserver flags that log there.
func auditLogDir() (dir string, args [][2]string, err error) {
	dir, err = os.MkdirTemp("", "mandate-audit-")
	if err != nil {
		return "", nil, fmt.Errorf("unable to create the audit log's directory: %w", err)
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o600); err != nil {
		return "", nil, errors.Join(fmt.Errorf("unable to write the audit policy: %w", err), removeAll(dir))
	}
	return dir, [][2]string{{"audit-policy-file", policy}, {"audit-log-path", filepath.Join(dir, auditLogName)}}, nil
}

func auditLogPath(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, auditLogName)
}
