package webhook

import (
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// requestLogger is the admission.Webhook LogConstructor of the handlers:
// the logger every request's context carries, with the request's fields
// (those of controller-runtime's DefaultLogConstructor but its "object",
// which repeats namespace and name). They are added
// when a line is written, not on every request: formatting them into the
// logger cost every admission allocations and a JSON encoding of six
// values, for lines that are rarely written.
func requestLogger(base logr.Logger, req *admission.Request) logr.Logger {
	if req == nil {
		return base
	}
	return logr.New(&requestSink{base: base, req: req})
}

// requestSink defers base.WithValues(the request's fields) to the first
// line written.
type requestSink struct {
	base logr.Logger
	req  *admission.Request
	once sync.Once
	full logr.LogSink // base with the request's fields, once needed
}

var _ logr.LogSink = (*requestSink)(nil)

func (s *requestSink) sink() logr.LogSink {
	s.once.Do(func() {
		r := s.req
		s.full = s.base.WithValues("namespace", r.Namespace, "name", r.Name,
			"resource", r.Resource, "user", r.UserInfo.Username, "requestID", r.UID).GetSink()
		if s.full == nil {
			s.full = logr.Discard().GetSink()
		}
	})
	return s.full
}

func (s *requestSink) Init(logr.RuntimeInfo) {}

func (s *requestSink) Enabled(level int) bool {
	base := s.base.GetSink()
	return base != nil && base.Enabled(level)
}

func (s *requestSink) Info(level int, msg string, kv ...any) { s.sink().Info(level, msg, kv...) }

func (s *requestSink) Error(err error, msg string, kv ...any) { s.sink().Error(err, msg, kv...) }

func (s *requestSink) WithValues(kv ...any) logr.LogSink { return s.sink().WithValues(kv...) }

func (s *requestSink) WithName(name string) logr.LogSink { return s.sink().WithName(name) }
