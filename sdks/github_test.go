package sdks_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-github/v81/github"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
	"github.com/headgate-go/headgate/sdks/fake"
)

// gitHubLimits stands for GitHub's primary limit (5,000 an hour, in fixed
// windows) at a scale a test runs through in a few seconds.
var gitHubLimits = quotatest.Config{Requests: 20, Period: time.Second}

// inThisCentury runs f in a testing/synctest bubble whose clock first moves
// to 2026: GitHub's x-ratelimit-reset is a Unix time, which a budget reads
// by its size against the clock (ratelimit.Parse), and a bubble starts in
// 2000.
func inThisCentury(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))) // instant, in virtual time
		f(t)
	})
}

// gitHubClient is go-github over rt, at the fake's base URL.
func gitHubClient(rt http.RoundTripper) *github.Client {
	c := github.NewClient(&http.Client{Transport: rt})
	c.BaseURL, _ = url.Parse("http://api.github.test/")
	return c
}

// gitHubRun makes n calls from workers goroutines. A call refused with a
// rate-limit error is retried at once, up to twice, with go-github's own
// check bypassed: the budget holds the retry until the pause is over. It
// returns the calls that failed and the attempts made; those the provider
// did not see, go-github refused on its own (its client-side check).
func gitHubRun(c *github.Client, n int, bypass bool) (failed, attempts int) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
	)
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				ctx := context.Background()
				if bypass {
					ctx = context.WithValue(ctx, github.BypassRateLimitCheck, true)
				}
				var err error
				for range 3 {
					mu.Lock()
					attempts++
					mu.Unlock()
					_, _, err = c.Repositories.Get(ctx, "octocat", "Hello-World")
					var rl *github.RateLimitError
					var abuse *github.AbuseRateLimitError
					if !errors.As(err, &rl) && !errors.As(err, &abuse) {
						break
					}
				}
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return failed, attempts
}

// TestGitHub runs many concurrent calls through go-github and a budget of
// GitHub's primary limit: at most two refused — the guesses, one after
// the other, by which the budget learns that the quota comes in windows
// (core/internal/quota: a guess refused widens the estimate, and the next
// waits longer) — and through go-github alone: many are.
func TestGitHub(t *testing.T) {
	for _, withHeadgate := range []bool{true, false} {
		t.Run(map[bool]string{true: "headgate", false: "alone"}[withHeadgate], func(t *testing.T) {
			inThisCentury(t, func(t *testing.T) {
				api, err := fake.GitHub(gitHubLimits)
				if err != nil {
					t.Fatal(err)
				}
				rt := http.RoundTripper(api.Transport())
				if withHeadgate {
					rt = core.NewTransport(rt, core.MustBudget(core.PerSecond(gitHubLimits.Requests)))
				}
				start := time.Now()
				failed, attempts := gitHubRun(gitHubClient(rt), 60, true)
				local := attempts - api.Count()
				t.Logf("headgate %v: %d calls in %v, %d refused, %d failed, %d refused by go-github's check",
					withHeadgate, api.Admitted(), time.Since(start), api.Refused(), failed, local)
				switch {
				case withHeadgate && (api.Refused() > 2 || failed != 0):
					t.Errorf("with headgate: %d refused, %d failed; want at most the two probes, none failed", api.Refused(), failed)
				case !withHeadgate && api.Refused() == 0:
					t.Error("without headgate no call was refused: the test cannot tell headgate's effect")
				}
			})
		})
	}
}

// TestGitHubSharedPause: GitHub pauses (a secondary limit: 403 with
// retry-after) while calls run. go-github returns an AbuseRateLimitError
// and, for every later call on the client, refuses on its own until the
// retry-after has passed; with its check bypassed, a retry goes to the
// budget, which holds it with every other caller until the pause ends.
func TestGitHubSharedPause(t *testing.T) {
	for _, bypass := range []bool{true, false} {
		t.Run(map[bool]string{true: "BypassRateLimitCheck", false: "go-github's check"}[bypass], func(t *testing.T) {
			inThisCentury(t, func(t *testing.T) {
				api, err := fake.GitHub(gitHubLimits)
				if err != nil {
					t.Fatal(err)
				}
				c := gitHubClient(core.NewTransport(api.Transport(), core.MustBudget(core.PerSecond(gitHubLimits.Requests))))
				pausedAt := pauseDuring(api, 500*time.Millisecond, 2*time.Second)
				failed, attempts := gitHubRun(c, 60, bypass)
				local := attempts - api.Count()
				t.Logf("%d calls failed, %d refused by go-github's check", failed, local)
				if !bypass {
					pausedAt() // (the pause comes even when every call failed before it)
					if local == 0 {
						t.Error("go-github's check refused nothing: the test does not show why to bypass it")
					}
					return
				}
				if failed != 0 || local != 0 {
					t.Errorf("%d calls failed, %d refused by go-github's check; want none", failed, local)
				}
				// The call that meets the pause is told to retry in whole seconds,
				// rounded up: the end the budget knows is up to a second after
				// the pause's, and its callers go within 20ms of that one.
				at, pause := pausedAt(), 2*time.Second
				told := pause
				for _, a := range api.Arrivals() {
					if a.Outcome == quotatest.RefusedPause {
						left := at.Add(pause).Sub(a.At)
						told = a.At.Add((left + time.Second - 1).Truncate(time.Second)).Sub(at)
						break
					}
				}
				checkPause(t, api, at, pause, told-pause+20*time.Millisecond, true)
			})
		})
	}
}
