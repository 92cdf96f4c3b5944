package bundles

import (
	"errors"
	"net/url"
	"strings"
)

// redactedValue replaces a credential in a URL shown anywhere.
const redactedValue = "REDACTED"

// RedactURL is ref as Mandate shows it in status, logs, metrics and errors:
// a password in the user information and the value of every query
// parameter (tokens, signatures) replaced by REDACTED. Anything that is not
// an absolute URL (a file or directory path) is returned as it is.
func RedactURL(ref string) string {
	u, err := url.Parse(ref)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.Contains(ref, "://") {
			// Unparseable but URL-like: show nothing after the scheme.
			scheme, _, _ := strings.Cut(ref, "://")
			return scheme + "://" + redactedValue
		}
		return ref
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redactedValue)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{redactedValue}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactError rewrites the URL an HTTP client error carries (net/http
// hides a password but not query tokens).
func redactError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		uerr.URL = RedactURL(uerr.URL)
	}
	return err
}
