package decisionlog

// Redacted replaces a value Redact hides.
const Redacted = "(redacted)"

// Redact returns a copy of a decoded Kubernetes object safe to log, at
// every depth (so the pod templates of Jobs, PyTorchJobs and Volcano Jobs
// too): each env entry keeps only its name (value and valueFrom are
// dropped), args and command are dropped, annotation values are replaced
// by Redacted (they may carry tokens, and last-applied-configuration the
// whole object), and managedFields are dropped. obj is not modified.
func Redact(obj map[string]any) map[string]any {
	out, _ := redact(obj).(map[string]any)
	return out
}

func redact(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			switch k {
			case "managedFields", "args", "command":
				continue
			case "annotations":
				if m, ok := val.(map[string]any); ok {
					hidden := make(map[string]any, len(m))
					for ak := range m {
						hidden[ak] = Redacted
					}
					out[k] = hidden
					continue
				}
			case "env":
				if list, ok := val.([]any); ok {
					names := make([]any, 0, len(list))
					for _, item := range list {
						if m, ok := item.(map[string]any); ok {
							names = append(names, map[string]any{"name": m["name"]})
						}
					}
					out[k] = names
					continue
				}
			}
			out[k] = redact(val)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = redact(item)
		}
		return out
	default:
		return v
	}
}
