package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"

	"github.com/mandate-dev/mandate/topology"
)

// PlacementBuiltin is the Rego name of the placement evaluator.
const PlacementBuiltin = "mandate.placement"

// placementRequestType is the builtin's argument: pods, gpusPerPod and
// resource are required; product, requiredLevel and preferredLevel are
// optional strings, read by name (placementRequest), and cluster, a
// fixture of levels and nodes, is read only by the test registration
// (RegisterTestBuiltins).
var placementRequestType = types.NewObject([]*types.StaticProperty{
	types.NewStaticProperty("pods", types.N),
	types.NewStaticProperty("gpusPerPod", types.N),
	types.NewStaticProperty("resource", types.S),
}, types.NewDynamicProperty(types.S, types.A))

// capacityType is one domain's free capacity in the result.
var capacityType = types.NewObject([]*types.StaticProperty{
	types.NewStaticProperty("domain", types.S),
	types.NewStaticProperty("level", types.S),
	types.NewStaticProperty("podSlots", types.N),
	types.NewStaticProperty("gpus", types.N),
}, nil)

// placementResultType is the builtin's result: named properties only, so
// `opa check --strict` and bundle compilation reject a policy reading
// placement.fitsnow.
var placementResultType = types.NewObject([]*types.StaticProperty{
	types.NewStaticProperty("fitsNow", types.B),
	types.NewStaticProperty("fitsEmpty", types.B),
	types.NewStaticProperty("domain", types.S),
	types.NewStaticProperty("level", types.S),
	types.NewStaticProperty("score", types.N),
	types.NewStaticProperty("freeAfter", types.N),
	types.NewStaticProperty("largest", capacityType),
	types.NewStaticProperty("bestNow", capacityType),
	types.NewStaticProperty("clusterFree", types.N),
	types.NewStaticProperty("clusterTotal", types.N),
	types.NewStaticProperty("shortfall", shortfallType),
}, nil)

// shortfallType says, when no domain of the required level has room for
// one pod, which domains were considered and how close the freest came.
var shortfallType = types.NewObject([]*types.StaticProperty{
	types.NewStaticProperty("level", types.S),
	types.NewStaticProperty("domains", types.N),
	types.NewStaticProperty("freest", types.S),
	types.NewStaticProperty("freestGPUs", types.N),
	types.NewStaticProperty("freestNodeGPUs", types.N),
}, nil)

var placementDecl = &rego.Function{
	Name: PlacementBuiltin,
	Description: "Best-fit topology placement of a gang: whether pods × gpusPerPod of resource (and product) " +
		"fit now within one domain of requiredLevel (preferring preferredLevel), whether they could ever fit " +
		"in the empty cluster, the chosen domain, score and free capacity left. Reads the live cluster snapshot. " +
		"Deterministic for a given snapshot.",
	Decl: types.NewFunction(
		types.Args(types.Named("request", placementRequestType).
			Description("pods, gpusPerPod, resource, product, requiredLevel, preferredLevel, pool (the authority model's pool "+
				"the gang is confined to: every answer is computed over its nodes only), gpuShareMilli (KAI-shared pods: "+
				"the thousandths of each device a pod takes; they pack onto shared devices of one node); cluster is read only by `mandate opa test`")),
		types.Named("result", placementResultType).
			Description("fitsNow, fitsEmpty, domain, level, score, freeAfter, largest, bestNow, clusterFree, clusterTotal, "+
				"shortfall (when no domain has room for one pod: level, domains considered, freest domain, its free GPUs and most on one node)"),
	),
	// It reads the live cluster state, which changes between evaluations.
	Nondeterministic: true,
}

// The production placement builtin, registered once for the type checker
// and the evaluator.
func init() {
	rego.RegisterBuiltin1(placementDecl, func(bctx rego.BuiltinContext, op *ast.Term) (*ast.Term, error) {
		return placement(bctx, op, false)
	})
}

type snapshotKey struct{}

// ContextWithSnapshot makes s the cluster snapshot mandate.placement reads in
// evaluations under ctx. Decide does this for Input.Cluster; it is exported
// for queries other than the decision (benchmarks, tools).
func ContextWithSnapshot(ctx context.Context, s *topology.Snapshot) context.Context {
	return context.WithValue(ctx, snapshotKey{}, s)
}

// placement is the Go side of mandate.placement. Undefined when there is
// no snapshot to place against. fixtures says whether request.cluster (a
// fixture) is read: only under RegisterTestBuiltins.
func placement(bctx rego.BuiltinContext, op *ast.Term, fixtures bool) (*ast.Term, error) {
	obj, ok := op.Value.(ast.Object)
	if !ok {
		return nil, errors.New("request must be an object")
	}
	req, err := placementRequest(obj)
	if err != nil {
		return nil, err
	}
	snap, err := snapshotFor(bctx, obj, fixtures)
	if err != nil || snap == nil {
		return nil, err
	}
	res, err := snap.Place(req)
	if err != nil {
		return nil, err
	}
	var short topology.Shortfall
	if req.GPUsPerPod > 0 && res.BestNow.PodSlots == 0 {
		if short, err = snap.Shortfall(req); err != nil {
			return nil, err
		}
	}
	return ast.NewTerm(resultValue(res, short)), nil
}

func snapshotFor(bctx rego.BuiltinContext, req ast.Object, fixtures bool) (*topology.Snapshot, error) {
	if fixtures {
		if c := req.Get(ast.InternedTerm("cluster")); c != nil {
			if _, isNull := c.Value.(ast.Null); !isNull {
				return fixtureSnapshot(c.Value)
			}
		}
	}
	if bctx.Context == nil {
		return nil, nil
	}
	s, _ := bctx.Context.Value(snapshotKey{}).(*topology.Snapshot)
	return s, nil
}

// fixtureSnapshot builds a snapshot from an inline fixture, caching the last
// few so that a test suite does not rebuild the same fixture per call.
func fixtureSnapshot(v ast.Value) (*topology.Snapshot, error) {
	key := v.String()
	fixtures.mu.Lock()
	s, ok := fixtures.byKey[key]
	fixtures.mu.Unlock()
	if ok {
		return s, nil
	}
	raw, err := ast.JSON(v)
	if err != nil {
		return nil, fmt.Errorf("cluster fixture: %w", err)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("cluster fixture: %w", err)
	}
	var f topology.Fixture
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cluster fixture is malformed: %w", err)
	}
	s, err = topology.FromFixture(f)
	if err != nil {
		return nil, fmt.Errorf("cluster fixture: %w", err)
	}
	fixtures.mu.Lock()
	if len(fixtures.byKey) >= maxFixtures {
		clear(fixtures.byKey)
	}
	fixtures.byKey[key] = s
	fixtures.mu.Unlock()
	return s, nil
}

const maxFixtures = 32

var fixtures = struct {
	mu    sync.Mutex
	byKey map[string]*topology.Snapshot
}{byKey: map[string]*topology.Snapshot{}}
