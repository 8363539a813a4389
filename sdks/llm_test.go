package sdks_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

// The LLM runs: calls calls by workers goroutines, each asking for up to
// maxTokens tokens, against a provider of llmLimits.
const (
	calls     = 400
	workers   = 12
	maxTokens = 1000
	streamFor = 2 * time.Second // a streamed answer takes this long
)

var llmLimits = quotatest.Config{Requests: 600, Period: time.Minute, Tokens: 20_000}

// llmBudget is headgate's budget for llmLimits: the provider's documented
// requests and tokens per minute.
func llmBudget() *core.Budget {
	return core.MustBudget(core.PerMinute(llmLimits.Requests),
		core.WithDimension("tokens", core.PerMinute(llmLimits.Tokens)))
}

// prompt is call i's prompt; its estimate is what it may use at most.
func prompt(i int) string { return fmt.Sprintf("call %d: write about rate limits", i) }

func estimate(p string) core.Cost {
	in, _ := fake.Usage(p, 1)
	return core.Cost{Dimension: "tokens", Amount: int64(in + maxTokens)}
}

// A llmCall makes one call with the SDK under ctx and returns the tokens
// the SDK decoded.
type llmCall func(ctx context.Context, prompt string) (int64, error)

// llmResult is what a run measured.
type llmResult struct {
	took      time.Duration // from the first call to the last answer
	decoded   int64         // tokens the SDK decoded, over every call
	committed int64         // tokens committed through Commitment.Commit
	open      int           // calls whose Commitment found an open cost
	errs      int
}

// runLLM makes the calls. With commit, each call's usage is committed from
// what the SDK decoded (core.WithCommit); otherwise the call's Commitment
// must find nothing left to settle, since core.WithUsage committed it.
func runLLM(t *testing.T, call llmCall, commit bool) llmResult {
	t.Helper()
	var (
		res  llmResult
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= calls; i = int(next.Add(1)) {
				p := prompt(i)
				ctx, c := core.WithCommit(context.Background(), estimate(p))
				used, err := call(ctx, p)
				mu.Lock()
				if err != nil {
					res.errs++
					if res.errs == 1 {
						t.Logf("call %d: %v", i, err)
					}
				}
				res.decoded += used
				if commit && c.Commit(core.Cost{Dimension: "tokens", Amount: used}) {
					res.committed += used
					res.open++
				} else if !commit && c.Commit() {
					res.open++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	return res
}

// ideal is the least time the provider's limits allow for what it
// admitted: the last token admitted no sooner than (tokens − burst)/rate
// (and the last request no sooner than its own bound), then answered.
func ideal(api *fake.API, latency time.Duration) time.Duration {
	var tokens int
	for _, a := range api.Arrivals() {
		tokens += a.Tokens
	}
	per := func(n, burst, limit int) time.Duration {
		return time.Duration(max(0, n-burst)) * llmLimits.Period / time.Duration(limit)
	}
	return max(per(tokens, llmLimits.Tokens, llmLimits.Tokens), per(api.Admitted(), llmLimits.Requests, llmLimits.Requests)) + latency
}

// checkLLM checks a run with headgate: no refusal, the tokens the provider
// counted decoded and committed (by commit, or by core.WithUsage), and a
// run within 1.05× of the ideal.
func checkLLM(t *testing.T, api *fake.API, res llmResult, commit bool, latency time.Duration) {
	t.Helper()
	var counted int64
	for _, a := range api.Arrivals() {
		counted += int64(a.Tokens)
	}
	id := ideal(api, latency)
	t.Logf("%d calls, %d tokens: took %v, ideal %v (%.3f×), %d refused, %d errors",
		api.Admitted(), counted, res.took, id, float64(res.took)/float64(id), api.Refused(), res.errs)
	if api.Refused() != 0 || res.errs != 0 {
		t.Errorf("%d requests refused, %d calls failed; want none", api.Refused(), res.errs)
	}
	if res.decoded != counted {
		t.Errorf("the SDK decoded %d tokens, the provider counted %d", res.decoded, counted)
	}
	switch {
	case commit && (res.committed != counted || res.open != calls):
		t.Errorf("committed %d tokens in %d calls; want %d in %d", res.committed, res.open, counted, calls)
	case !commit && res.open != 0:
		t.Errorf("%d calls left uncommitted by core.WithUsage", res.open)
	}
	if float64(res.took) > 1.05*float64(id) {
		t.Errorf("took %v, more than 1.05× the ideal %v", res.took, id)
	}
}

// checkPause checks a run during which the provider paused for pause from
// pausedAt (on its clock): the budget heard the first refusal and held
// every caller, so in real time at most workers calls (those already sent)
// were refused, and in virtual time (exact) at most 3 (those let go at that
// same instant; a budget that did not pause lets its queue run into the
// pause as each refusal gives its tokens back) and nothing else reached the
// provider until the pause ended; and the first call after it went within late of its end: the
// SDK's own wait and the budget's pause overlap, the pause is waited once
// (a Retry-After in whole seconds may end it up to a second late).
func checkPause(t *testing.T, api *fake.API, pausedAt time.Time, pause, late time.Duration, exact bool) {
	t.Helper()
	end := pausedAt.Add(pause)
	most := workers + 2 // in real time, calls already sent when the budget heard, and the guesses of the quota's model (core/internal/quota)
	if exact {
		most = 3 // calls the budget let go at that same instant
	}
	var first, after time.Time
	for _, a := range api.Arrivals() {
		switch {
		case a.Outcome == quotatest.RefusedPause && first.IsZero():
			first = a.At
		case exact && !first.IsZero() && a.At.After(first) && a.At.Before(end):
			t.Errorf("a request reached the provider %v into its pause, after the budget heard of it", a.At.Sub(pausedAt))
		case !first.IsZero() && !a.At.Before(end) && after.IsZero():
			after = a.At
		}
	}
	t.Logf("pause of %v: %d refused, first call after it %v after its end", pause, api.Refused(), after.Sub(end))
	switch {
	case first.IsZero():
		t.Fatal("no call met the pause")
	case api.Refused() > most:
		t.Errorf("%d calls refused by the pause, want at most %d", api.Refused(), most)
	case after.Sub(end) >= late:
		t.Errorf("first call after the pause went %v after its end, want under %v", after.Sub(end), late)
	}
}

// pauseDuring makes api pause for pause once, at after from now; the
// function it returns waits for that and says when.
func pauseDuring(api *fake.API, after, pause time.Duration) (pausedAt func() time.Time) {
	at := make(chan time.Time, 1)
	go func() {
		time.Sleep(after)
		at <- time.Now()
		api.PauseFor(pause)
	}()
	return sync.OnceValue(func() time.Time { return <-at })
}
