package evaluator

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mandate-dev/mandate/topology"
)

// placementRequest reads a topology.Request from the builtin's argument
// without a JSON round trip: this runs on every admission.
func placementRequest(obj ast.Object) (topology.Request, error) {
	var r topology.Request
	var err error
	if r.Pods, err = intField(obj, "pods", true); err != nil {
		return r, err
	}
	if r.GPUsPerPod, err = intField(obj, "gpusPerPod", true); err != nil {
		return r, err
	}
	if r.GPUShareMilli, err = intFieldTerm(obj, gpuShareMilliKey, "gpuShareMilli"); err != nil {
		return r, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"resource", &r.Resource},
		{"product", &r.Product},
		{"requiredLevel", &r.RequiredLevel},
		{"preferredLevel", &r.PreferredLevel},
		{"pool", &r.Pool},
	} {
		if *f.dst, err = stringField(obj, f.name); err != nil {
			return r, err
		}
	}
	return r, nil
}

// gpuShareMilliKey is the optional gpuShareMilli key, made once: it is
// read on every admission.
var gpuShareMilliKey = ast.StringTerm("gpuShareMilli")

// intFieldTerm reads the optional number under key (named name), 0 when
// absent.
func intFieldTerm(obj ast.Object, key *ast.Term, name string) (int, error) {
	t := obj.Get(key)
	if t == nil {
		return 0, nil
	}
	return intValue(t, name)
}

func intField(obj ast.Object, name string, required bool) (int, error) {
	t := obj.Get(ast.InternedTerm(name))
	if t == nil {
		if required {
			return 0, fmt.Errorf("request.%s is missing", name)
		}
		return 0, nil
	}
	return intValue(t, name)
}

func intValue(t *ast.Term, name string) (int, error) {
	n, ok := t.Value.(ast.Number)
	if !ok {
		return 0, fmt.Errorf("request.%s must be a number, got %s", name, ast.ValueName(t.Value))
	}
	i, ok := n.Int()
	if !ok {
		return 0, fmt.Errorf("request.%s must be a whole number, got %s", name, n)
	}
	return i, nil
}

func stringField(obj ast.Object, name string) (string, error) {
	t := obj.Get(ast.InternedTerm(name))
	if t == nil {
		return "", nil
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("request.%s must be a string, got %s", name, ast.ValueName(t.Value))
	}
	return string(s), nil
}

// The result's keys and the request's, interned once (at init, as OPA
// requires): the result is made on every admission, and a key made on the
// fly costs two allocations.
func init() {
	ast.InternStringTerm(
		"fitsNow", "fitsEmpty", "domain", "level", "score", "freeAfter", "largest", "bestNow",
		"clusterFree", "clusterTotal", "shortfall", "domains", "freest", "freestGPUs", "freestNodeGPUs",
		"podSlots", "gpus",
		"pods", "gpusPerPod", "resource", "product", "requiredLevel", "preferredLevel", "cluster", "pool",
	)
}

// resultValue renders a Result as a Rego object with the JSON field names of
// topology.Result.
func resultValue(r topology.Result, short topology.Shortfall) ast.Value {
	return ast.NewObject(
		item("fitsNow", ast.InternedTerm(r.FitsNow)),
		item("fitsEmpty", ast.InternedTerm(r.FitsEmpty)),
		item("domain", ast.StringTerm(r.Domain)),
		item("level", ast.InternedTerm(r.Level)),
		item("score", ast.FloatNumberTerm(r.Score)),
		item("freeAfter", ast.InternedTerm(r.FreeAfter)),
		item("largest", ast.NewTerm(capacityValue(r.Largest))),
		item("bestNow", ast.NewTerm(capacityValue(r.BestNow))),
		item("clusterFree", ast.InternedTerm(r.ClusterFree)),
		item("clusterTotal", ast.InternedTerm(r.ClusterTotal)),
		item("shortfall", ast.ObjectTerm(
			item("level", ast.InternedTerm(short.Level)),
			item("domains", ast.InternedTerm(short.Domains)),
			item("freest", ast.StringTerm(short.Freest)),
			item("freestGPUs", ast.InternedTerm(short.FreestGPUs)),
			item("freestNodeGPUs", ast.InternedTerm(short.FreestNodeGPUs)),
		)),
	)
}

func capacityValue(c topology.DomainCapacity) ast.Value {
	return ast.NewObject(
		item("domain", ast.StringTerm(c.Domain)),
		item("level", ast.InternedTerm(c.Level)),
		item("podSlots", ast.InternedTerm(c.PodSlots)),
		item("gpus", ast.InternedTerm(c.GPUs)),
	)
}

// item is key: v, the key interned; v may be an interned term (shared,
// never modified: OPA treats terms as values).
func item(key string, v *ast.Term) [2]*ast.Term {
	return ast.Item(ast.InternedTerm(key), v)
}
