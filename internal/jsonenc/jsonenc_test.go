package jsonenc

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var oddStrings = []string{"", "plain", "quote \" backslash \\ slash /", "control \x00\x01\x1f\x7f\t\n\r\b\f",
	"<html> & 'x'", "line\u2028sep\u2029", "bad utf8 \xff\xfe end \xc3", "ünïcödé 日本 🚀"}

// decoded is raw decoded by encoding/json.
func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// TestAppendValueDecodesAsEncodingJSON: whatever AppendValue writes decodes
// to what encoding/json's encoding of the same value decodes to.
func TestAppendValueDecodesAsEncodingJSON(t *testing.T) {
	values := []any{nil, true, false, int64(-3), 7, int32(8), 2.0, 0.5, -1e-7, 1e21, 123456789012345678.0,
		map[string]any{}, []any{}, map[string]string{"b": "1", "a": "2"},
		map[string]any{"z": []any{map[string]any{"weight": int64(100), "term": map[string]any{"k/~": "v"}}, nil, "s"}, "a": 1.5},
		struct {
			A string `json:"a"`
		}{"x"}}
	for _, s := range oddStrings {
		values = append(values, s, map[string]any{s: s})
	}
	for _, v := range values {
		got, err := AppendValue(nil, v)
		require.NoError(t, err)
		want, err := json.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, decoded(t, want), decoded(t, got), "value %#v: wrote %s", v, got)
	}
	// Object keys are sorted, as encoding/json writes them.
	got, err := AppendValue(nil, map[string]any{"b": 1, "a": 2, "c": map[string]string{"y": "", "x": ""}})
	require.NoError(t, err)
	assert.Equal(t, `{"a":2,"b":1,"c":{"x":"","y":""}}`, string(got))
	_, err = AppendValue(nil, math.NaN())
	assert.Error(t, err)
}
