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

// resultValue renders a Result as a Rego object with the JSON field names of
// topology.Result.
func resultValue(r topology.Result, short topology.Shortfall) ast.Value {
	return ast.NewObject(
		item("fitsNow", ast.Boolean(r.FitsNow)),
		item("fitsEmpty", ast.Boolean(r.FitsEmpty)),
		item("domain", ast.String(r.Domain)),
		item("level", ast.String(r.Level)),
		item("score", ast.FloatNumberTerm(r.Score).Value),
		item("freeAfter", ast.InternedTerm(r.FreeAfter).Value),
		item("largest", capacityValue(r.Largest)),
		item("bestNow", capacityValue(r.BestNow)),
		item("clusterFree", ast.InternedTerm(r.ClusterFree).Value),
		item("clusterTotal", ast.InternedTerm(r.ClusterTotal).Value),
		item("shortfall", ast.NewObject(
			item("level", ast.String(short.Level)),
			item("domains", ast.InternedTerm(short.Domains).Value),
			item("freest", ast.String(short.Freest)),
			item("freestGPUs", ast.InternedTerm(short.FreestGPUs).Value),
			item("freestNodeGPUs", ast.InternedTerm(short.FreestNodeGPUs).Value),
		)),
	)
}

func capacityValue(c topology.DomainCapacity) ast.Value {
	return ast.NewObject(
		item("domain", ast.String(c.Domain)),
		item("level", ast.String(c.Level)),
		item("podSlots", ast.InternedTerm(c.PodSlots).Value),
		item("gpus", ast.InternedTerm(c.GPUs).Value),
	)
}

func item(key string, v ast.Value) [2]*ast.Term {
	return ast.Item(ast.InternedTerm(key), ast.NewTerm(v))
}
