# A policy that asks the placement builtin, for the benchmark.
package bench

result := mandate.placement(input.request)
