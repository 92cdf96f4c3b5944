package topology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Defaults and limits of a Config.
const (
	// DefaultProductLabel is the node label naming the GPU model (set by
	// NVIDIA GPU feature discovery): the one definition of it. The
	// topology reads it when Config.ProductLabel is empty, schedsync and
	// sbatch render it when not told another, and a workload pins a GPU
	// product by it (workload.PodProduct).
	DefaultProductLabel = "nvidia.com/gpu.product"
	// DefaultToleratedTaint is the taint key tolerated when
	// Config.ToleratedTaints is nil: the GPU operator and cloud node pools
	// taint GPU nodes with the GPU resource's name.
	DefaultToleratedTaint = DefaultGPUResource
	// MaxLevels bounds how many levels a Config may have.
	MaxLevels = 32
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("invalid topology config")

// WithDefaults returns a copy of c with the defaults filled in: ProductLabel
// DefaultProductLabel, ToleratedTaints [DefaultToleratedTaint] when nil.
// Slices are copied, so the result shares no memory with c.
func (c Config) WithDefaults() Config {
	out := Config{
		Levels:              slices.Clone(c.Levels),
		ProductLabel:        c.ProductLabel,
		UnhealthyLabel:      c.UnhealthyLabel,
		UnhealthyValues:     slices.Clone(c.UnhealthyValues),
		UnhealthyConditions: slices.Clone(c.UnhealthyConditions),
		ToleratedTaints:     slices.Clone(c.ToleratedTaints),
		GPUMemoryMiB:        c.GPUMemoryMiB,
		Pools:               maps.Clone(c.Pools),
	}
	if out.ProductLabel == "" {
		out.ProductLabel = DefaultProductLabel
	}
	if c.ToleratedTaints == nil {
		out.ToleratedTaints = []string{DefaultToleratedTaint}
	}
	return out
}

// Validate reports the first problem of c: no levels, more than MaxLevels, an
// empty or duplicate level name or node label. Errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	if len(c.Levels) == 0 {
		return fmt.Errorf("%w: at least one level is required", ErrInvalidConfig)
	}
	if len(c.Levels) > MaxLevels {
		return fmt.Errorf("%w: %d levels, at most %d are supported", ErrInvalidConfig, len(c.Levels), MaxLevels)
	}
	names := make(map[string]int, len(c.Levels))
	labels := make(map[string]int, len(c.Levels))
	for i, l := range c.Levels {
		if l.Name == "" {
			return fmt.Errorf("%w: level %d has an empty name", ErrInvalidConfig, i)
		}
		if l.NodeLabel == "" {
			return fmt.Errorf("%w: level %q has an empty nodeLabel", ErrInvalidConfig, l.Name)
		}
		if j, dup := names[l.Name]; dup {
			return fmt.Errorf("%w: levels %d and %d are both named %q", ErrInvalidConfig, j, i, l.Name)
		}
		if j, dup := labels[l.NodeLabel]; dup {
			return fmt.Errorf("%w: levels %q and %q both read node label %q",
				ErrInvalidConfig, c.Levels[j].Name, l.Name, l.NodeLabel)
		}
		names[l.Name] = i
		labels[l.NodeLabel] = i
	}
	return nil
}
