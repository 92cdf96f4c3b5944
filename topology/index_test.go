package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexPersistent checks the treap against a sorted slice under random
// inserts and deletes, and that every root published earlier still holds
// exactly what it held then.
func TestIndexPersistent(t *testing.T) {
	type version struct {
		root *tnode
		want []entry
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var root *tnode
	var live []entry
	var versions []version
	edit := uint64(1)
	for step := range 5000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(live))
			root = treeDelete(root, live[i].sum, live[i].key, edit)
			live = slices.Delete(live, i, i+1)
		} else {
			e := entry{sum: rng.IntN(20), key: fmt.Sprintf("d%04d", rng.IntN(1<<30))}
			if slices.ContainsFunc(live, func(x entry) bool { return x.key == e.key }) {
				continue
			}
			root = treeInsert(root, e, edit)
			live = append(live, e)
		}
		slices.SortFunc(live, func(a, b entry) int { return cmpKey(a.sum, a.key, &b) })
		if step%50 == 0 {
			versions = append(versions, version{root, slices.Clone(live)})
			edit++ // publish: later writes must copy
		}
	}
	for i, v := range versions {
		var got []entry
		ascendAll(v.root, func(e *entry) bool { got = append(got, *e); return true })
		require.Equal(t, v.want, got, "version %d", i)
	}
	var from []entry
	ascend(root, 10, "", func(e *entry) bool { from = append(from, *e); return true })
	want := slices.DeleteFunc(slices.Clone(live), func(e entry) bool { return e.sum < 10 })
	require.Equal(t, want, from)
	if len(live) > 0 {
		top, ok := maxSumBelow(root, 1<<62)
		require.True(t, ok)
		require.Equal(t, live[len(live)-1].sum, top)
	}
}
