package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	listJSON, err := os.ReadFile(filepath.Join("testdata", "list.json"))
	require.NoError(t, err)
	cases := []struct {
		name      string
		input     string
		wantKinds []string // apiVersion kind/name of each object
		wantErr   string   // substring; every error wraps ErrInvalid
	}{
		{
			name:      "empty input",
			input:     "",
			wantKinds: nil,
		},
		{
			name:      "multi-document YAML with empty and comment-only documents",
			input:     "---\n# nothing\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: b}\n",
			wantKinds: []string{"v1 Pod/a", "batch/v1 Job/b"},
		},
		{
			name:      "JSON generic List",
			input:     string(listJSON),
			wantKinds: []string{"v1 Pod/a", "batch/v1 Job/b"},
		},
		{
			name:      "typed list items inherit apiVersion and kind",
			input:     "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n",
			wantKinds: []string{"v1 Pod/a", "v1 Pod/b"},
		},
		{
			name:      "a kind ending in List without items is an object",
			input:     "apiVersion: example.com/v1\nkind: AllowList\nmetadata: {name: x}\n",
			wantKinds: []string{"example.com/v1 AllowList/x"},
		},
		{
			name:    "generic List items need their own kind",
			input:   "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n",
			wantErr: "document 0: item 0: invalid workload: apiVersion is required",
		},
		{
			name:    "missing kind names the document",
			input:   "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
			wantErr: "document 1: invalid workload: kind is required",
		},
		{
			name:    "malformed YAML",
			input:   "apiVersion: v1\nkind: [Pod\n",
			wantErr: "document 0: invalid workload: malformed YAML or JSON",
		},
		{
			name:    "a scalar document",
			input:   "just a string\n",
			wantErr: "a document must be an object, not a string",
		},
		{
			name:    "items not an array",
			input:   "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			wantErr: "List items must be an array, not an object",
		},
		{
			name:    "nested lists",
			input:   "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
			wantErr: "lists nested in lists are not supported",
		},
		{
			name:    "over the size cap",
			input:   "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n    big: " + strings.Repeat("x", MaxDecodeBytes) + "\n",
			wantErr: "more than the 8388608 allowed",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.input))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				got = append(got, o.GetAPIVersion()+" "+o.GetKind()+"/"+o.GetName())
			}
			assert.Equal(t, tc.wantKinds, got)
		})
	}
}

func TestDecodeKeepsIntegers(t *testing.T) {
	objs, err := Decode([]byte(`{"apiVersion":"batch/v1","kind":"Job","spec":{"parallelism":4}}`))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, int64(4), objs[0].Object["spec"].(map[string]any)["parallelism"])
}
