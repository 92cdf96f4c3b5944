package bundles

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/modelcheck"
)

// ErrTestsFailed is returned by RunTests (and Build with Test) when any Rego
// test fails or errors; the error names each one.
var ErrTestsFailed = errors.New("rego tests failed")

// TestFailure is one failing Rego test.
type TestFailure struct {
	// Name is package.rule, e.g. data.mandate.quota_test.test_over_quota.
	Name string
	// Location is file:row.
	Location string
	// Err is the evaluation error, when the test errored rather than failed.
	Err error
}

func (f TestFailure) String() string {
	s := f.Name
	if f.Location != "" {
		s += " (" + f.Location + ")"
	}
	if f.Err != nil {
		s += ": " + f.Err.Error()
	}
	return s
}

// TestsFailedError lists the failing tests; it wraps ErrTestsFailed.
type TestsFailedError struct {
	Dir      string
	Total    int
	Failures []TestFailure
}

func (e *TestsFailedError) Error() string {
	names := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		names[i] = f.String()
	}
	return fmt.Sprintf("%s in %q: %d of %d failed:\n  %s", ErrTestsFailed, e.Dir, len(e.Failures), e.Total, strings.Join(names, "\n  "))
}

func (e *TestsFailedError) Unwrap() error { return ErrTestsFailed }

// RunTests runs the Rego tests of dir with OPA's tester, Mandate's builtins
// (and the model checker's, for tests) registered, and returns a *TestsFailedError when any fails.
func RunTests(ctx context.Context, dir string) error {
	evaluator.RegisterTestBuiltins()
	modelcheck.RegisterTestBuiltin()
	modules, store, err := tester.LoadWithRegoVersion([]string{dir}, nil, ast.RegoV1)
	if err != nil {
		return fmt.Errorf("unable to load the tests of %q: %w", dir, err)
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return fmt.Errorf("unable to run the tests of %q: %w", dir, err)
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().
		SetStore(store).
		SetModules(modules).
		SetDefaultRegoVersion(ast.RegoV1).
		RunTests(ctx, txn)
	if err != nil {
		return fmt.Errorf("unable to run the tests of %q: %w", dir, err)
	}
	failed := &TestsFailedError{Dir: dir}
	for r := range ch {
		if r.Skip {
			continue
		}
		failed.Total++
		if r.Pass() {
			continue
		}
		f := TestFailure{Name: r.Package + "." + r.Name, Err: r.Error}
		if r.Location != nil {
			f.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		failed.Failures = append(failed.Failures, f)
	}
	if failed.Total == 0 {
		return fmt.Errorf("unable to run the tests of %q: no test_ rules found", dir)
	}
	if len(failed.Failures) > 0 {
		sort.Slice(failed.Failures, func(i, j int) bool { return failed.Failures[i].Name < failed.Failures[j].Name })
		return failed
	}
	return nil
}
