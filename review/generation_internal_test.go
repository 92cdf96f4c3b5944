package review

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestGenerationOf: a review's object, decoded straight from JSON, has
// its generation as a float64; apimachinery's as an int64; none is 0.
func TestGenerationOf(t *testing.T) {
	fromJSON, err := decodeObject([]byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a","generation":3}}`), "ns")
	assert.NoError(t, err)
	assert.Equal(t, int64(3), generationOf(fromJSON))
	typed := &unstructured.Unstructured{Object: map[string]any{}}
	typed.SetGeneration(5)
	assert.Equal(t, int64(5), generationOf(typed))
	assert.Zero(t, generationOf(&unstructured.Unstructured{Object: map[string]any{}}))
}
