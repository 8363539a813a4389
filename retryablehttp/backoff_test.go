package retryablehttp_test

import (
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/headgate-go/headgate/core"
	hgretry "github.com/headgate-go/headgate/retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingBackoff is a next backoff that says 7s and records what it saw.
type recordingBackoff struct {
	calls      int
	retryAfter []string // the Retry-After values of the responses it was given
}

func (r *recordingBackoff) backoff(_, _ time.Duration, _ int, resp *http.Response) time.Duration {
	r.calls++
	if resp != nil {
		r.retryAfter = append(r.retryAfter, resp.Header.Values("Retry-After")...)
	}
	return 7 * time.Second
}

func response(status int, path string, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: status,
		Header:     h,
		Request:    &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "api.example", Path: path}},
	}
}

// TestBackoff checks every decision of Backoff on a budget that is not
// paused: the wait a response asks for, read by core's parser and capped,
// or else next's backoff, which never sees a Retry-After. Dates are exact
// under synctest's fixed clock.
func TestBackoff(t *testing.T) {
	at := func(format func(time.Time) string, d time.Duration) func() http.Header {
		return func() http.Header { return http.Header{"Retry-After": {format(time.Now().Add(d).UTC())}} }
	}
	value := func(k, v string) func() http.Header {
		return func() http.Header { return http.Header{k: {v}} }
	}
	none := func() http.Header { return nil }
	tests := []struct {
		name     string
		status   int
		header   func() http.Header // called inside the bubble, where dates are exact
		want     time.Duration
		wantNext bool // next decided (and saw no Retry-After)
	}{
		{"seconds", 429, value("Retry-After", "2"), 2 * time.Second, false},
		{"seconds-503", 503, value("Retry-After", "2"), 2 * time.Second, false},
		{"imf-fixdate", 429, at(imfFixdate, 2*time.Second), 2 * time.Second, false},
		{"rfc850", 429, at(rfc850, 2*time.Second), 2 * time.Second, false},
		{"asctime", 429, at(asctime, 2*time.Second), 2 * time.Second, false},
		{"retry-after-ms", 429, value("Retry-After-Ms", "1500"), 1500 * time.Millisecond, false},
		{"absurd", 429, value("Retry-After", "1743440400"), core.DefaultMaxPause, false}, // 484289 hours
		{"past-date", 429, at(imfFixdate, -time.Minute), 7 * time.Second, true},
		{"negative", 429, value("Retry-After", "-2"), 7 * time.Second, true},
		{"bad", 429, value("Retry-After", "soon"), 7 * time.Second, true},
		{"no-header", 429, none, 7 * time.Second, true},
		{"no-header-500", 500, none, 7 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := tt.header()
				next := &recordingBackoff{}
				b := core.MustBudget(core.PerSecond(10)) // never paused: it sees no response
				got := hgretry.Backoff(b, next.backoff)(time.Second, 30*time.Second, 0, response(tt.status, "/v1/items", h))
				assert.Equal(t, tt.want, got, "Backoff(%d %v)", tt.status, h)
				if tt.wantNext {
					assert.Equal(t, 1, next.calls, "next called")
					assert.Empty(t, next.retryAfter, "next must not see a Retry-After it could parse itself")
				} else {
					assert.Zero(t, next.calls, "next called")
				}
			})
		})
	}
}

// TestBackoffWaitsThePause checks that a paused budget decides the wait,
// whatever the response says: the time left in the pause, to the
// nanosecond, even for a response with no Retry-After or none at all.
func TestBackoffWaitsThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(10))
		b.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}}, time.Time{})
		time.Sleep(500 * time.Millisecond)
		next := &recordingBackoff{}
		bo := hgretry.Backoff(b, next.backoff)
		for _, resp := range []*http.Response{
			response(503, "/v1/items", nil),
			response(429, "/v1/items", http.Header{"Retry-After": {"1"}}),
			nil, // a transport error
		} {
			assert.Equal(t, 2500*time.Millisecond, bo(time.Second, 30*time.Second, 3, resp))
		}
		assert.Zero(t, next.calls)

		time.Sleep(2500 * time.Millisecond) // the pause is over: next decides again
		assert.Equal(t, 7*time.Second, bo(time.Second, 30*time.Second, 3, response(503, "/v1/items", nil)))
		assert.Equal(t, 1, next.calls)
	})
}

// TestBackoffNilNext checks that nil next means retryablehttp.DefaultBackoff.
func TestBackoffNilNext(t *testing.T) {
	b := core.MustBudget(core.PerSecond(10))
	bo := hgretry.Backoff(b, nil)
	for attempt := range 4 {
		resp := response(503, "/", nil)
		want := retryablehttp.DefaultBackoff(time.Second, 5*time.Second, attempt, resp)
		assert.Equal(t, want, bo(time.Second, 5*time.Second, attempt, resp), "attempt %d", attempt)
	}
	assert.Equal(t, 4*time.Second, bo(time.Second, 5*time.Second, 2, nil))
}

// TestBackoffLanes checks that the Backoff Use installs reads the pause of
// the lane the request spent from, found from the response's request path.
func TestBackoffLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := core.MustBudget(core.PerSecond(10))
		exports := core.MustBudget(core.PerSecond(1))
		exports.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"4"}}, time.Time{})
		next := &recordingBackoff{}
		c := retryablehttp.NewClient()
		c.Backoff = next.backoff
		hgretry.Use(c, b, core.WithLane("/exports", exports))

		assert.Equal(t, 4*time.Second, c.Backoff(time.Second, 30*time.Second, 0, response(503, "/v2/exports/orders.csv", nil)),
			"a request in the paused lane waits for its pause")
		assert.Equal(t, 7*time.Second, c.Backoff(time.Second, 30*time.Second, 0, response(503, "/v2/items", nil)),
			"a request outside the lane is not held by the lane's pause")
	})
}

func TestBackoffNilBudgetPanics(t *testing.T) {
	require.PanicsWithValue(t, "hgretry: Backoff needs a budget (core.Disabled() for none)", func() {
		hgretry.Backoff(nil, nil)
	})
}
