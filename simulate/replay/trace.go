package replay

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/topology"
)

// Job is one workload of a trace: when it is submitted, how long it runs
// once started, whose it is and what it asks for. Times are seconds from
// the trace's start.
type Job struct {
	// Name is unique in the trace.
	Name string `json:"name"`
	// Submit is when it is created; Duration how long it runs once all of
	// its gang has started (a preempted job starts again from the
	// beginning).
	Submit   float64 `json:"submit"`
	Duration float64 `json:"duration"`
	// Tenant is a tenant of the model: the job's namespace is the tenant's
	// own (named after it, labelled mandate.dev/tenant). Namespace instead
	// names a namespace of the --cluster snapshot, whose label says the
	// tenant (or none: a tenancy denial, as at admission).
	Tenant    string `json:"tenant,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Pods is the gang's size (the elastic maximum); MinPods the elastic
	// minimum it may start with (0: all of Pods).
	Pods    int `json:"pods"`
	MinPods int `json:"minPods,omitempty"`
	// GPUsPerPod whole GPUs of Resource; GPUMilli, for one GPU, a share of
	// it in thousandths (KAI's gpu-fraction), 0 or 1000 for the whole GPU.
	GPUsPerPod int    `json:"gpusPerPod"`
	GPUMilli   int64  `json:"gpuMilli,omitempty"`
	Resource   string `json:"resource,omitempty"`
	// Products the pods may run on (the node label nvidia.com/gpu.product);
	// one product is also what the decision sees (a node selector).
	Products []string `json:"products,omitempty"`
	// CPUMilli and MemoryMiB per pod.
	CPUMilli  int64 `json:"cpuMilli,omitempty"`
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// PriorityClass is the pod template's priorityClassName ("" for the
	// model's class default).
	PriorityClass string `json:"priorityClass,omitempty"`
	// Class is the mandate.dev/class label (training, inference,
	// interactive, batch); "" leaves it to the kind.
	Class string `json:"class,omitempty"`
	// Topology is the level the gang asks to share
	// (mandate.dev/topology-required); "" leaves it to the model's rules.
	Topology string `json:"topology,omitempty"`
}

// csvColumns are the trace's CSV columns, in the JSON names; a file needs
// name, submit, duration, pods and gpusPerPod and may leave out the rest.
// products is a list separated by '|'.
var csvColumns = []string{"name", "submit", "duration", "tenant", "namespace", "pods", "minPods", "gpusPerPod",
	"gpuMilli", "resource", "products", "cpuMilli", "memoryMiB", "priorityClass", "class", "topology"}

var requiredColumns = []string{"name", "submit", "duration", "pods", "gpusPerPod"}

// ReadTraceFile reads a trace in Mandate's format: JSON lines (one Job
// per line, .jsonl or .json) or CSV (.csv, a header of Job's JSON names).
func ReadTraceFile(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the trace: %w", err)
	}
	defer f.Close()
	var jobs []Job
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		jobs, err = ReadTraceCSV(f, path)
	} else {
		jobs, err = ReadTraceJSON(f, path)
	}
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// ReadTraceJSON reads JSON lines, one Job each; blank lines and lines
// starting with '#' are skipped.
func ReadTraceJSON(r io.Reader, name string) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var j Job
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if err := j.check(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("unable to read %s: %w", name, err)
	}
	return jobs, unique(jobs, name)
}

// ReadTraceCSV reads the CSV form: a header row of column names (csvColumns),
// then one job a row.
func ReadTraceCSV(r io.Reader, name string) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: unable to read the header: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if !slices.Contains(csvColumns, h) {
			return nil, fmt.Errorf("%s: unknown column %q, want some of %s", name, h, strings.Join(csvColumns, ", "))
		}
		col[h] = i
	}
	for _, c := range requiredColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: column %q is missing", name, c)
		}
	}
	var jobs []Job
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		cell := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		var bad error
		num := func(c string) float64 {
			v := cell(c)
			if v == "" || bad != nil {
				return 0
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				bad = fmt.Errorf("column %s: %q is not a number", c, v)
			}
			return f
		}
		j := Job{Name: cell("name"), Submit: num("submit"), Duration: num("duration"), Tenant: cell("tenant"),
			Namespace: cell("namespace"), Pods: int(num("pods")), MinPods: int(num("minPods")),
			GPUsPerPod: int(num("gpusPerPod")), GPUMilli: int64(num("gpuMilli")), Resource: cell("resource"),
			CPUMilli: int64(num("cpuMilli")), MemoryMiB: int64(num("memoryMiB")),
			PriorityClass: cell("priorityClass"), Class: cell("class"), Topology: cell("topology")}
		if p := cell("products"); p != "" {
			j.Products = strings.Split(p, "|")
		}
		if bad == nil {
			bad = j.check()
		}
		if bad != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, bad)
		}
		jobs = append(jobs, j)
	}
	return jobs, unique(jobs, name)
}

// check holds a job to what the simulation can replay.
func (j Job) check() error {
	switch {
	case j.Name == "":
		return errors.New("a job needs a name")
	case !(j.Submit >= 0 && j.Duration >= 0) || math.IsInf(j.Submit, 0) || math.IsInf(j.Duration, 0):
		return fmt.Errorf("job %s: submit and duration must be finite and not negative", j.Name)
	case j.Pods < 1:
		return fmt.Errorf("job %s: pods must be at least 1", j.Name)
	case j.MinPods < 0 || j.MinPods > j.Pods:
		return fmt.Errorf("job %s: minPods must be from 0 to pods (%d)", j.Name, j.Pods)
	case j.GPUsPerPod < 0:
		return fmt.Errorf("job %s: gpusPerPod must not be negative", j.Name)
	case j.GPUMilli < 0 || j.GPUMilli > topology.MilliPerGPU || (j.GPUMilli > 0 && j.GPUMilli < topology.MilliPerGPU && j.GPUsPerPod != 1):
		return fmt.Errorf("job %s: gpuMilli is a share of one GPU (gpusPerPod 1), from 1 to %d", j.Name, topology.MilliPerGPU)
	case j.Tenant != "" && j.Namespace != "":
		return fmt.Errorf("job %s: give a tenant or a namespace, not both", j.Name)
	case j.Tenant == "" && j.Namespace == "":
		return fmt.Errorf("job %s: a job needs a tenant or a namespace", j.Name)
	}
	return nil
}

func unique(jobs []Job, name string) error {
	seen := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		if seen[j.Name] {
			return fmt.Errorf("%s: job %s appears twice", name, j.Name)
		}
		seen[j.Name] = true
	}
	return nil
}
