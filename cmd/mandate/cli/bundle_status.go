package cli

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/bundles"
)

// defaultStatusAddr is where `mandate bundle status` asks by default: the
// metrics server of a local mandate serve.
const defaultStatusAddr = "127.0.0.1:8080"

func newBundleStatusCommand() *cobra.Command {
	var (
		addr      string
		output    string
		timeout   time.Duration
		tokenFile string
		insecure  bool
	)
	cmd := &cobra.Command{
		Use:   "status [--addr host:port] [-o table|json|yaml]",
		Short: "Show which bundle revision mandate serve runs, and why the last one was rejected",
		Long: `Ask a running mandate serve, on its metrics address, which policy bundle
revision is active (and the shadow one, if any), where it came from, when it
was activated, and how the last attempt went: the step that rejected a bundle
(read, verify, model, compile, smoke, state, persist) and why.

Exits 1 when the last attempt failed or nothing is active, 2 when the server
cannot be asked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, raw, err := fetchStatus(addr, statusClient{timeout: timeout, tokenFile: tokenFile, insecure: insecure})
			if err != nil {
				return &exitError{code: exitBundleBadArg, err: err}
			}
			switch output {
			case outputJSON:
				_, err = cmd.OutOrStdout().Write(raw)
			case outputYAML:
				err = writeStructured(cmd.OutOrStdout(), output, st)
			default:
				err = writeStatus(cmd.OutOrStdout(), st, time.Now())
			}
			if err != nil {
				return err
			}
			if problems := statusProblems(st); len(problems) > 0 {
				return &exitError{code: exitBundleFailed, err: errors.New(strings.Join(problems, "; "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", defaultStatusAddr, "metrics address of mandate serve (host:port, or an http(s) URL)")
	addOutputFlag(cmd, &output)
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	f.StringVar(&tokenFile, "token-file", "", "file holding a bearer token, for a serve with --metrics-auth (an https:// --addr)")
	f.BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not verify the serving certificate of an https:// --addr (Mandate generates its own)")
	return cmd
}

// statusClient is how `bundle status` asks: its timeout and, for a serve
// with --metrics-auth, a token and whether to verify the certificate.
type statusClient struct {
	timeout   time.Duration
	tokenFile string
	insecure  bool
}

// fetchStatus GETs the bundle status from a mandate serve.
func fetchStatus(addr string, sc statusClient) (bundles.ServingStatus, []byte, error) {
	url := addr
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		url = "http://" + addr
	}
	url = strings.TrimSuffix(url, "/") + bundles.StatusPath
	var st bundles.ServingStatus
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return st, nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	if sc.tokenFile != "" {
		token, err := os.ReadFile(sc.tokenFile)
		if err != nil {
			return st, nil, fmt.Errorf("--token-file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: sc.insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // asked for by --insecure-skip-tls-verify
	resp, err := (&http.Client{Timeout: sc.timeout, Transport: tr}).Do(req)
	if err != nil {
		return st, nil, fmt.Errorf("unable to ask mandate serve for its bundle status: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return st, nil, fmt.Errorf("unable to read the bundle status from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return st, nil, fmt.Errorf("unable to get the bundle status from %s: %s", url, resp.Status)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, nil, fmt.Errorf("%s did not answer with a bundle status: %w", url, err)
	}
	return st, raw, nil
}

// statusProblems says what is wrong: nothing active, or a failed attempt.
func statusProblems(st bundles.ServingStatus) []string {
	var problems []string
	check := func(role string, s bundles.Status) {
		if s.Revision == "" {
			problems = append(problems, "no "+role+" revision is active")
		}
		if s.LastError != "" {
			problems = append(problems, "the last "+role+" bundle attempt failed at "+s.LastStep)
		}
	}
	check("active", st.Active)
	if st.Shadow != nil {
		check("shadow", *st.Shadow)
	}
	return problems
}

func writeStatus(out io.Writer, st bundles.ServingStatus, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	writeOne(tw, "Active", st.Active, now)
	if st.Shadow != nil {
		fmt.Fprintln(tw)
		writeOne(tw, "Shadow", *st.Shadow, now)
	}
	return tw.Flush()
}

func writeOne(tw io.Writer, role string, s bundles.Status, now time.Time) {
	revision := s.Revision
	if revision == "" {
		revision = "(none)"
	}
	fmt.Fprintf(tw, "%s revision:\t%s\n", role, revision)
	if s.Source != "" {
		fmt.Fprintf(tw, "Source:\t%s\n", s.Source)
	}
	if !s.ActivatedAt.IsZero() {
		fmt.Fprintf(tw, "Activated:\t%s (%s ago)\n", s.ActivatedAt.UTC().Format(time.RFC3339), ago(now, s.ActivatedAt))
	}
	if !s.LastAttempt.IsZero() {
		result := "ok"
		if s.LastError != "" {
			result = "FAILED at " + s.LastStep
		}
		fmt.Fprintf(tw, "Last attempt:\t%s (%s ago): %s\n", s.LastAttempt.UTC().Format(time.RFC3339), ago(now, s.LastAttempt), result)
	}
	if s.LastError != "" {
		fmt.Fprintf(tw, "Error:\t%s\n", s.LastError)
	}
}

func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String()
}
