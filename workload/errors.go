package workload

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Decode and Normalize return wraps exactly one
// of them, so callers (the webhook, the CLI's exit code 2) classify input
// problems with errors.Is.
var (
	// ErrInvalid marks input that cannot be a valid workload: malformed
	// documents, missing or out-of-range fields, contradictory GPU requests.
	ErrInvalid = errors.New("invalid workload")
	// ErrUnsupportedKind marks an object whose kind has no Normaliser; the
	// wrapping message lists the supported kinds.
	ErrUnsupportedKind = errors.New("unsupported kind")
)

// invalidField reports a bad field value: which field, the value found and
// what is allowed.
func invalidField(field string, value any, allowed string) error {
	return fmt.Errorf("%w: %s is %v: %s", ErrInvalid, field, quoteIfString(value), allowed)
}

// missingField reports a required field that is absent or empty.
func missingField(field, why string) error {
	return fmt.Errorf("%w: %s is required: %s", ErrInvalid, field, why)
}

// invalidf wraps ErrInvalid with a free-form explanation.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func quoteIfString(v any) any {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return v
}
