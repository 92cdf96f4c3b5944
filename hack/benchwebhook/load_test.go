package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// answering answers every AdmissionReview with the response (the JSON of
// its fields after the uid) given, echoing its uid.
func answering(response string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,%s}}`, in.Request.UID, response)
	}
}

// admitAll answers every AdmissionReview allowed.
var admitAll = answering(`"allowed":true`)

// TestDriveCountsWrongVerdictsAndErrors: a server admitting everything is
// wrong on the denied examples and right on the others; one answering 500
// gives only errors, never successes.
func TestDriveCountsWrongVerdictsAndErrors(t *testing.T) {
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	srv := httptest.NewTLSServer(admitAll)
	defer srv.Close()
	tgt := target{name: "admit-all", urls: []string{srv.URL}, pids: []int{os.Getpid()}, client: srv.Client()}
	// Each of the two workers sends every example once.
	c, err := drive(context.Background(), tgt, examples, 2, 0, len(examples))
	require.NoError(t, err)
	require.Equal(t, 2*(len(examples)-countDenied(examples)), c.ok, "the admitted examples")
	require.Equal(t, 2*countDenied(examples), c.wrong, "the denied examples, admitted")
	require.Zero(t, c.errors)
	require.Contains(t, c.firstWrong, "expected denied")
	require.Len(t, c.latencies, c.ok+c.wrong)
	require.NoError(t, checkAll(context.Background(), target{name: "x", urls: []string{srv.URL}, client: srv.Client(), deniedDims: []string{}}, examples),
		"a system checking no dimension is expected to admit everything")
	require.Error(t, checkAll(context.Background(), tgt, examples))

	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "policy evaluation exceeded its deadline", http.StatusInternalServerError)
	}))
	defer failing.Close()
	tgt = target{name: "failing", urls: []string{failing.URL}, pids: []int{os.Getpid()}, client: failing.Client()}
	c, err = drive(context.Background(), tgt, examples, 2, 0, 3)
	require.NoError(t, err)
	require.Zero(t, c.ok+c.wrong)
	require.Equal(t, 6, c.errors)
	require.Equal(t, c.errors, c.errorCounts["HTTP 500"])
}

// TestReviewErrorsAreNotVerdicts: an AdmissionReview answering "not
// allowed" with a 5xx status (the webhook failed to decide, as
// controller-runtime's admission.Errored answers) is an error, not a
// wrong verdict, so a busy machine never fails the run.
func TestReviewErrorsAreNotVerdicts(t *testing.T) {
	examples, err := loadExamples(repoExamples + "/workloads")
	require.NoError(t, err)
	srv := httptest.NewTLSServer(answering(
		`"allowed":false,"status":{"code":500,"message":"mandate could not decide: policy evaluation exceeded its deadline"}`))
	defer srv.Close()
	tgt := target{name: "erroring", urls: []string{srv.URL}, pids: []int{os.Getpid()}, client: srv.Client()}
	c, err := drive(context.Background(), tgt, examples, 2, 0, len(examples))
	require.NoError(t, err)
	require.Zero(t, c.ok+c.wrong, "a failure to decide is neither right nor wrong")
	require.Equal(t, 2*len(examples), c.errors)
	require.Equal(t, c.errors, c.errorCounts["review 500"])
	require.Contains(t, c.firstError, "exceeded its deadline")
}
