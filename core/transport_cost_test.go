package core

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestTransportCostCommitAndDefaults sends requests that carry a tokens
// estimate through a Transport and checks when the next one may go after
// each way of settling: Commit, a 2xx closed without Commit, an error
// status closed without Commit, and a transport error.
func TestTransportCostCommitAndDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100 tokens a second, burst 100: 100 tokens take a second to return.
		b := MustBudget(PerSecond(1000), WithDimension("tokens", PerSecond(100)))
		status, fail := http.StatusOK, false
		next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if fail {
				return nil, errors.New("connection refused")
			}
			return &http.Response{StatusCode: status, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"usage":{"total_tokens":30}}`)), Request: r}, nil
		})
		c := &http.Client{Transport: NewTransport(next, b)}
		start := time.Now()
		send := func(step int, want time.Duration) *http.Response {
			t.Helper()
			ctx := WithCost(context.Background(), Cost{"tokens", 100})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/", nil)
			resp, err := c.Do(req)
			if got := time.Since(start); got != want {
				t.Fatalf("step %d: sent at %v, want %v", step, got, want)
			}
			if err != nil {
				return nil
			}
			return resp
		}
		resp := send(1, 0)
		io.ReadAll(resp.Body) // the end of the body does not settle: Commit still can
		if !Commit(resp, Cost{"tokens", 30}) {
			t.Fatal("step 1: Commit = false, want true")
		}
		if Commit(resp, Cost{"tokens", 0}) {
			t.Fatal("step 1: second Commit = true, want false")
		}
		resp.Body.Close()
		// 70 came back at once; 30 more take 0.3 s.
		resp = send(2, 300*time.Millisecond)
		resp.Body.Close() // a 2xx without Commit keeps its estimate
		resp = send(3, 1300*time.Millisecond)
		resp.Body.Close()
		status = http.StatusInternalServerError
		resp = send(4, 2300*time.Millisecond)
		resp.Body.Close() // a 500 gives its estimate back
		fail = true
		send(5, 2300*time.Millisecond) // a transport error gives it back too
		fail = false
		resp = send(6, 2300*time.Millisecond)
		resp.Body.Close()
	})
}
