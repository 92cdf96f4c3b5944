package evaluator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"

	"github.com/mandate-dev/mandate/topology"
)

// PlacementBuiltin is the Rego name of the placement evaluator.
const PlacementBuiltin = "mandate.placement"

var placementDecl = &rego.Function{
	Name: PlacementBuiltin,
	Description: "Best-fit topology placement of a gang: whether pods × gpusPerPod of resource (and product) " +
		"fit now within one domain of requiredLevel (preferring preferredLevel), whether they could ever fit " +
		"in the empty cluster, the chosen domain, score and free capacity left. Reads the live cluster snapshot, " +
		"or the fixture in request.cluster when it is not null. Deterministic for a given snapshot.",
	Decl: types.NewFunction(
		types.Args(types.Named("request", types.NewObject(
			[]*types.StaticProperty{
				types.NewStaticProperty("pods", types.N),
				types.NewStaticProperty("gpusPerPod", types.N),
				types.NewStaticProperty("resource", types.S),
			},
			types.NewDynamicProperty(types.S, types.A),
		)).Description("pods, gpusPerPod, resource, product, requiredLevel, preferredLevel, and optionally cluster (a fixture: levels and nodes)")),
		types.Named("result", types.NewObject(nil, types.NewDynamicProperty(types.S, types.A))).
			Description("fitsNow, fitsEmpty, domain, level, score, freeAfter, largest, bestNow, clusterFree, clusterTotal"),
	),
}

var registerOnce sync.Once

// RegisterBuiltins registers Mandate's builtins with OPA's type checker and
// evaluator, globally, so that both Evaluators and the `mandate opa` CLI
// know them. It is safe to call more than once.
func RegisterBuiltins() {
	registerOnce.Do(func() {
		rego.RegisterBuiltin1(placementDecl, placement)
	})
}

type snapshotKey struct{}

// ContextWithSnapshot makes s the cluster snapshot mandate.placement reads in
// evaluations under ctx. Decide does this for Input.Cluster; it is exported
// for queries other than the decision (benchmarks, tools).
func ContextWithSnapshot(ctx context.Context, s *topology.Snapshot) context.Context {
	return context.WithValue(ctx, snapshotKey{}, s)
}

// placement is the Go side of mandate.placement. Undefined when there is no
// snapshot to place against.
func placement(bctx rego.BuiltinContext, op *ast.Term) (*ast.Term, error) {
	obj, ok := op.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%s: request must be an object", PlacementBuiltin)
	}
	req, err := placementRequest(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PlacementBuiltin, err)
	}
	snap, err := snapshotFor(bctx, obj)
	if err != nil || snap == nil {
		return nil, err
	}
	res, err := snap.Place(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PlacementBuiltin, err)
	}
	return ast.NewTerm(resultValue(res)), nil
}

func snapshotFor(bctx rego.BuiltinContext, req ast.Object) (*topology.Snapshot, error) {
	if c := req.Get(ast.InternedTerm("cluster")); c != nil {
		if _, isNull := c.Value.(ast.Null); !isNull {
			return fixtureSnapshot(c.Value)
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
		return nil, fmt.Errorf("%s: cluster fixture: %w", PlacementBuiltin, err)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: cluster fixture: %w", PlacementBuiltin, err)
	}
	var f topology.Fixture
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: cluster fixture is malformed: %w", PlacementBuiltin, err)
	}
	s, err = topology.FromFixture(f)
	if err != nil {
		return nil, fmt.Errorf("%s: cluster fixture: %w", PlacementBuiltin, err)
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
