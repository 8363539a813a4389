package quotatest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// t0 is where every synctest bubble's clock starts.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// fatalRecorder is a testing.TB whose Fatal records its message instead of
// ending the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }

// TestNewTestProvider: a valid Config gives the Provider New gives (5 of 10
// at once admitted at 5/s); an invalid one fails the test at once, naming
// the field, and gives no Provider.
func TestNewTestProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
		c := p.Client()
		for range 10 {
			fetch(t, c, http.MethodGet, api)
		}
		if p.Admitted() != 5 || p.Refused() != 5 {
			t.Errorf("admitted %d, refused %d; want 5 and 5", p.Admitted(), p.Refused())
		}
	})
	r := &fatalRecorder{TB: t}
	if p := quotatest.NewTestProvider(r, quotatest.Config{Period: time.Second}); p != nil || !strings.Contains(r.fatal, "Requests") {
		t.Errorf("NewTestProvider(no Requests) = %v, failed the test with %q; want nil and a failure naming Requests", p, r.fatal)
	}
}

// reply is a response read to the end.
type reply struct {
	status int
	header http.Header
	body   string
}

// fetch sends a request and reads the whole response, failing the test on any error.
func fetch(t *testing.T, c *http.Client, method, url string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// expect fetches url and checks the status and the given headers ("" means absent).
func expect(t *testing.T, c *http.Client, step string, url string, status int, headers map[string]string) reply {
	t.Helper()
	r := fetch(t, c, http.MethodGet, url)
	if r.status != status {
		t.Fatalf("%s: GET %s at t0+%v: status %d, want %d (body %q)", step, url, time.Since(t0), r.status, status, r.body)
	}
	for k, want := range headers {
		if got := r.header.Get(k); got != want {
			t.Fatalf("%s: GET %s at t0+%v: %s = %q, want %q", step, url, time.Since(t0), k, got, want)
		}
	}
	return r
}

const api = "http://api.example/v1/items"

func TestGCRAAdmitsBurstThenRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
		c := p.Client()
		for i := range 5 {
			expect(t, c, fmt.Sprintf("burst %d", i), api, 200, map[string]string{"Retry-After": ""})
		}
		expect(t, c, "over the burst", api, 429, map[string]string{"Retry-After": "1"})
		time.Sleep(199 * time.Millisecond)
		expect(t, c, "1ms early", api, 429, map[string]string{"Retry-After": "1"})
		time.Sleep(time.Millisecond)
		expect(t, c, "after 200ms", api, 200, nil)
		expect(t, c, "again over", api, 429, map[string]string{"Retry-After": "1"})
		if got, want := p.Refused(), 3; got != want {
			t.Errorf("Refused() = %d, want %d", got, want)
		}
		if got, want := p.Admitted(), 6; got != want {
			t.Errorf("Admitted() = %d, want %d", got, want)
		}
	})
}

func TestFixedWindowAdmitsRequestsPerWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 3, Period: time.Second,
			Algorithm: quotatest.FixedWindow, Headers: quotatest.RetryAfterSeconds | quotatest.XRateLimitDelta})
		c := p.Client()
		time.Sleep(300 * time.Millisecond) // windows are aligned: this one ends at t0+1s
		for i, rem := range []string{"2", "1", "0"} {
			expect(t, c, fmt.Sprintf("window 1, request %d", i), api, 200,
				map[string]string{"X-RateLimit-Remaining": rem, "X-RateLimit-Reset": "1", "X-RateLimit-Limit": "3"})
		}
		expect(t, c, "window 1 spent", api, 429, map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "0"})
		time.Sleep(699 * time.Millisecond)
		expect(t, c, "window 1, last ms", api, 429, map[string]string{"Retry-After": "1"})
		time.Sleep(time.Millisecond)
		for i := range 3 {
			expect(t, c, fmt.Sprintf("window 2, request %d", i), api, 200, nil)
		}
		expect(t, c, "window 2 spent", api, 429, nil)
		if got, want := p.Admitted(), 6; got != want {
			t.Errorf("Admitted() = %d, want %d", got, want)
		}
	})
}

// TestHeaderStyles checks every style's exact header values at fixed virtual instants.
// The limit is 2 per 5s (GCRA, interval 2.5s), so most values need rounding up.
func TestHeaderStyles(t *testing.T) {
	const (
		ra     = "Retry-After"
		ram    = "Retry-After-Ms"
		pol    = "RateLimit-Policy"
		rl     = "RateLimit"
		xl     = "X-RateLimit-Limit"
		xr     = "X-RateLimit-Remaining"
		xreset = "X-RateLimit-Reset"
		at3    = "Sat, 01 Jan 2000 00:00:03 GMT"
		p2w5   = `"default";q=2;w=5`
	)
	all := []string{ra, ram, pol, rl, xl, xr, xreset}
	// The schedule: a sleep, then one request with this status.
	sleeps := []time.Duration{0, 0, 0, time.Second, 1500 * time.Millisecond}
	statuses := []int{200, 200, 429, 429, 200}
	tests := []struct {
		style quotatest.HeaderStyle
		want  [5]map[string]string // headers per step; the others in all must be absent
	}{
		{0, [5]map[string]string{{}, {}, {ra: "3"}, {ra: "2"}, {}}},
		{quotatest.RetryAfterSeconds, [5]map[string]string{{}, {}, {ra: "3"}, {ra: "2"}, {}}},
		{quotatest.RetryAfterDate, [5]map[string]string{{}, {}, {ra: at3}, {ra: at3}, {}}},
		{quotatest.RetryAfterMillis, [5]map[string]string{{}, {}, {ram: "2500"}, {ram: "1500"}, {}}},
		{quotatest.RetryAfterSeconds | quotatest.RetryAfterMillis, [5]map[string]string{
			{}, {}, {ra: "3", ram: "2500"}, {ra: "2", ram: "1500"}, {}}},
		{quotatest.IETF, [5]map[string]string{
			{pol: p2w5, rl: `"default";r=1;t=3`},
			{pol: p2w5, rl: `"default";r=0;t=5`},
			{pol: p2w5, rl: `"default";r=0;t=5`}, // refused: the quota is whole again in 5 s
			{pol: p2w5, rl: `"default";r=0;t=4`},
			{pol: p2w5, rl: `"default";r=0;t=5`}}},
		{quotatest.XRateLimitDelta, [5]map[string]string{
			{xl: "2", xr: "1", xreset: "3"},
			{xl: "2", xr: "0", xreset: "5"},
			{xl: "2", xr: "0", xreset: "5"},
			{xl: "2", xr: "0", xreset: "4"},
			{xl: "2", xr: "0", xreset: "5"}}},
		{quotatest.XRateLimitEpoch, [5]map[string]string{ // t0 is Unix 946684800
			{xl: "2", xr: "1", xreset: "946684803"},
			{xl: "2", xr: "0", xreset: "946684805"},
			{xl: "2", xr: "0", xreset: "946684805"},
			{xl: "2", xr: "0", xreset: "946684805"},
			{xl: "2", xr: "0", xreset: "946684808"}}},
		{quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds, [5]map[string]string{ // GitHub-like
			{xl: "2", xr: "1", xreset: "946684803"},
			{xl: "2", xr: "0", xreset: "946684805"},
			{xl: "2", xr: "0", xreset: "946684805", ra: "3"},
			{xl: "2", xr: "0", xreset: "946684805", ra: "2"},
			{xl: "2", xr: "0", xreset: "946684808"}}},
		// The same resets rounded down, as servers that write time.Unix() send them.
		{quotatest.IETF | quotatest.ResetRoundedDown, [5]map[string]string{
			{pol: p2w5, rl: `"default";r=1;t=2`},
			{pol: p2w5, rl: `"default";r=0;t=5`},
			{pol: p2w5, rl: `"default";r=0;t=5`},
			{pol: p2w5, rl: `"default";r=0;t=4`},
			{pol: p2w5, rl: `"default";r=0;t=5`}}},
		{quotatest.XRateLimitDelta | quotatest.ResetRoundedDown, [5]map[string]string{
			{xl: "2", xr: "1", xreset: "2"},
			{xl: "2", xr: "0", xreset: "5"},
			{xl: "2", xr: "0", xreset: "5"},
			{xl: "2", xr: "0", xreset: "4"},
			{xl: "2", xr: "0", xreset: "5"}}},
		{quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds | quotatest.ResetRoundedDown, [5]map[string]string{
			{xl: "2", xr: "1", xreset: "946684802"},
			{xl: "2", xr: "0", xreset: "946684805"},
			{xl: "2", xr: "0", xreset: "946684805", ra: "3"}, // Retry-After stays rounded up
			{xl: "2", xr: "0", xreset: "946684805", ra: "2"},
			{xl: "2", xr: "0", xreset: "946684807"}}},
		{quotatest.NoHeaders, [5]map[string]string{{}, {}, {}, {}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.style.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 2, Period: 5 * time.Second, Headers: tt.style})
				c := p.Client()
				for i, want := range tt.want {
					time.Sleep(sleeps[i])
					r := fetch(t, c, http.MethodGet, api)
					if r.status != statuses[i] {
						t.Fatalf("step %d at t0+%v: status %d, want %d", i, time.Since(t0), r.status, statuses[i])
					}
					for _, k := range all {
						if got := r.header.Get(k); got != want[k] {
							t.Errorf("step %d at t0+%v: %s = %q, want %q", i, time.Since(t0), k, got, want[k])
						}
					}
					if got, want := r.header.Get("Date"), time.Now().UTC().Format(http.TimeFormat); got != want {
						t.Errorf("step %d: Date = %q, want %q", i, got, want)
					}
				}
			})
		})
	}
}

// TestResetEncodings checks every form and rounding of the reset at two instants: 5 per 7s
// (GCRA, a token every 1.4s); a request at t0 (reset 1.4s, at t0+1.4s) and one at t0+0.5s
// (reset 2.3s, at t0+2.8s). t0 is Unix 946684800.
func TestResetEncodings(t *testing.T) {
	const (
		xreset = "X-RateLimit-Reset"
		rl     = "RateLimit"
	)
	tests := []struct {
		style quotatest.HeaderStyle
		key   string
		want  [2]string
	}{
		{quotatest.XRateLimitDelta, xreset, [2]string{"2", "3"}},
		{quotatest.XRateLimitDelta | quotatest.ResetRoundedDown, xreset, [2]string{"1", "2"}},
		{quotatest.XRateLimitDelta | quotatest.ResetRoundedNearest, xreset, [2]string{"1", "2"}},
		{quotatest.XRateLimitEpoch, xreset, [2]string{"946684802", "946684803"}},
		{quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown, xreset, [2]string{"946684801", "946684802"}},
		{quotatest.XRateLimitEpoch | quotatest.ResetRoundedNearest, xreset, [2]string{"946684801", "946684803"}},
		{quotatest.XRateLimitEpochMillis, xreset, [2]string{"946684801400", "946684802800"}},
		{quotatest.XRateLimitEpochMillis | quotatest.ResetRoundedDown, xreset, [2]string{"946684801400", "946684802800"}},
		{quotatest.XRateLimitDate, xreset, [2]string{"Sat, 01 Jan 2000 00:00:02 GMT", "Sat, 01 Jan 2000 00:00:03 GMT"}},
		{quotatest.XRateLimitDate | quotatest.ResetRoundedDown, xreset, [2]string{"Sat, 01 Jan 2000 00:00:01 GMT", "Sat, 01 Jan 2000 00:00:02 GMT"}},
		{quotatest.XRateLimitDate | quotatest.ResetRoundedNearest, xreset, [2]string{"Sat, 01 Jan 2000 00:00:01 GMT", "Sat, 01 Jan 2000 00:00:03 GMT"}},
		{quotatest.IETF | quotatest.ResetRoundedNearest, rl, [2]string{`"default";r=4;t=1`, `"default";r=3;t=2`}},
	}
	for _, tt := range tests {
		t.Run(tt.style.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: 7 * time.Second, Headers: tt.style})
				c := p.Client()
				for i, want := range tt.want {
					if i == 1 {
						time.Sleep(500 * time.Millisecond)
					}
					expect(t, c, fmt.Sprintf("request %d", i), api, 200, map[string]string{tt.key: want})
				}
			})
		})
	}
}

// TestAlgorithmsReport checks what each algorithm's responses state, through a Provider:
// the limit, the window, what remains and the refusal's wait.
func TestAlgorithmsReport(t *testing.T) {
	const pol, rl, ram = "RateLimit-Policy", "RateLimit", "Retry-After-Ms"
	tests := []struct {
		alg   quotatest.Algorithm
		burst int
		steps []map[string]string // requests 300ms apart: 200s but the last, a 429
	}{
		{quotatest.TokenBucket, 2, []map[string]string{
			{pol: `"default";q=2;w=1`, rl: `"default";r=1;t=1`}, // 4 per 2s: a token per 500ms; w: 2 tokens' time
			{rl: `"default";r=0;t=1`},                           // 1 + 0.6 back − 1 = 0.6 left
			{rl: `"default";r=0;t=1`},                           // 0.6 + 0.6 − 1 = 0.2 left, full in 900ms
			{ram: "100"},                                        // 0.2 + 0.6 = 0.8: 0.2 of a token to wait, 100ms
		}},
		{quotatest.SlidingLog, 0, []map[string]string{
			{pol: `"default";q=4;w=2`, rl: `"default";r=3;t=2`},
			{rl: `"default";r=2;t=2`},
			{rl: `"default";r=1;t=2`},
			{rl: `"default";r=0;t=2`},
			{ram: "800"}, // the first leaves at 2s
		}},
		{quotatest.FirstRequestWindow, 0, []map[string]string{
			{pol: `"default";q=4;w=2`, rl: `"default";r=3;t=2`},
			{rl: `"default";r=2;t=2`},
			{rl: `"default";r=1;t=2`},
			{rl: `"default";r=0;t=2`},
			{ram: "800"}, // the window opened at 0 ends at 2s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.alg.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 4, Period: 2 * time.Second, Burst: tt.burst, Algorithm: tt.alg,
					Headers: quotatest.IETF | quotatest.RetryAfterMillis})
				c := p.Client()
				time.Sleep(700 * time.Millisecond) // off the clock's windows
				for i, want := range tt.steps {
					if i > 0 {
						time.Sleep(300 * time.Millisecond)
					}
					status := 200
					if i == len(tt.steps)-1 {
						status = 429
					}
					expect(t, c, fmt.Sprintf("request %d", i), api, status, want)
				}
			})
		})
	}
}

func TestRetryAfterDateParses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 3, Period: time.Second, Headers: quotatest.RetryAfterDate})
		c := p.Client()
		time.Sleep(1700 * time.Millisecond)
		for range 3 {
			fetch(t, c, http.MethodGet, api)
		}
		r := expect(t, c, "refused", api, 429, nil)
		// The next admission is at t0+2.033…s: the date is that instant rounded up.
		at, err := http.ParseTime(r.header.Get("Retry-After"))
		if err != nil {
			t.Fatalf("Retry-After %q: %v", r.header.Get("Retry-After"), err)
		}
		if want := t0.Add(3 * time.Second); !at.Equal(want) {
			t.Errorf("Retry-After = %v, want %v", at, want)
		}
	})
}

func TestMaxConcurrentRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 100, Period: time.Second, MaxConcurrent: 2,
			Latency: time.Second, Headers: quotatest.RetryAfterSeconds | quotatest.XRateLimitDelta})
		c := p.Client()
		done := make(chan int, 2)
		for range 2 {
			go func() {
				resp, err := c.Get(api)
				if err != nil {
					done <- 0
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
		}
		synctest.Wait() // both are in the handler, waiting out the latency
		if got := p.InFlight(); got != 2 {
			t.Fatalf("InFlight() = %d, want 2", got)
		}
		// A third is refused, not queued: no Retry-After (no time can be promised), and the
		// rate headers say the quota is far from spent (refusals spend none of it).
		expect(t, c, "third", api, 429, map[string]string{"Retry-After": "", "X-RateLimit-Remaining": "98"})
		for range 2 {
			if status := <-done; status != 200 {
				t.Errorf("concurrent request: status %d, want 200", status)
			}
		}
		expect(t, c, "after the others", api, 200, nil)
		arr := p.Arrivals()
		if got := arr[2]; got.Outcome != quotatest.RefusedConcurrency || got.InFlight != 3 || got.Status != 429 {
			t.Errorf("third arrival = %+v, want RefusedConcurrency, InFlight 3, Status 429", got)
		}
		if got := p.PeakInFlight(); got != 3 {
			t.Errorf("PeakInFlight() = %d, want 3", got)
		}
		if got := p.Refused(); got != 1 {
			t.Errorf("Refused() = %d, want 1", got)
		}
	})
}

func TestPauseFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2 per 10s: once spent, the next admission is 5s away.
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 2, Period: 10 * time.Second})
		c := p.Client()
		expect(t, c, "spend 1", api, 200, nil)
		expect(t, c, "spend 2", api, 200, nil)
		p.PauseFor(2500 * time.Millisecond)
		if got := p.PauseRemaining(); got != 2500*time.Millisecond {
			t.Errorf("PauseRemaining() = %v, want 2.5s", got)
		}
		expect(t, c, "paused", api, 429, map[string]string{"Retry-After": "3"})
		time.Sleep(time.Second)
		expect(t, c, "still paused", api, 429, map[string]string{"Retry-After": "2"})
		time.Sleep(1499 * time.Millisecond)
		expect(t, c, "last ms of the pause", api, 429, map[string]string{"Retry-After": "1"})
		time.Sleep(time.Millisecond)
		// The pause has ended and cleared the limiter: a full burst, then the limit again.
		expect(t, c, "after the pause, 1", api, 200, nil)
		expect(t, c, "after the pause, 2", api, 200, nil)
		expect(t, c, "over the limit", api, 429, map[string]string{"Retry-After": "5"})
		if got := p.PauseRemaining(); got != 0 {
			t.Errorf("PauseRemaining() after the pause = %v, want 0", got)
		}
		var outcomes []quotatest.Outcome
		for _, a := range p.Arrivals() {
			outcomes = append(outcomes, a.Outcome)
		}
		want := "[Admitted Admitted RefusedPause RefusedPause RefusedPause Admitted Admitted RefusedRate]"
		if got := fmt.Sprint(outcomes); got != want {
			t.Errorf("outcomes = %s, want %s", got, want)
		}

		p.PauseFor(time.Hour)
		expect(t, c, "long pause", api, 429, map[string]string{"Retry-After": "3600"})
		p.PauseFor(0) // ends it, and clears the limiter
		expect(t, c, "pause ended early", api, 200, nil)
	})
}

func TestRecording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second})
		c := p.Client()
		fetch(t, c, http.MethodGet, api+"?page=2")
		time.Sleep(10 * time.Millisecond)
		fetch(t, c, http.MethodPost, "http://other.example/v2/orders")
		want := []quotatest.Arrival{
			{At: t0, Method: "GET", Path: "/v1/items", Outcome: quotatest.Admitted, Status: 200, InFlight: 1},
			{At: t0.Add(10 * time.Millisecond), Method: "POST", Path: "/v2/orders", Outcome: quotatest.RefusedRate, Status: 429, InFlight: 1},
		}
		got := p.Arrivals()
		if len(got) != len(want) {
			t.Fatalf("Arrivals() = %+v, want %d of them", got, len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if !g.At.Equal(w.At) || g.Method != w.Method || g.Path != w.Path || g.Outcome != w.Outcome ||
				g.Status != w.Status || g.InFlight != w.InFlight {
				t.Errorf("Arrivals()[%d] = %+v\nwant %+v", i, g, w)
			}
		}
		got[0].Status = 0 // a copy: the record is untouched
		if p.Arrivals()[0].Status != 200 {
			t.Error("Arrivals() returned the record itself, not a copy")
		}
		if p.Count() != 2 || p.Admitted() != 1 || p.Refused() != 1 || p.PeakInFlight() != 1 {
			t.Errorf("Count, Admitted, Refused, PeakInFlight = %d, %d, %d, %d; want 2, 1, 1, 1",
				p.Count(), p.Admitted(), p.Refused(), p.PeakInFlight())
		}
		p.Reset()
		if p.Count() != 0 || p.Admitted() != 0 || p.Refused() != 0 || p.PeakInFlight() != 0 || len(p.Arrivals()) != 0 {
			t.Errorf("after Reset: Count, Admitted, Refused, PeakInFlight = %d, %d, %d, %d; want 0s",
				p.Count(), p.Admitted(), p.Refused(), p.PeakInFlight())
		}
		expect(t, c, "Reset keeps the limiter", api, 429, nil)
	})
}

func TestHandlerServesAdmittedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /old", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/new", http.StatusFound)
		})
		mux.HandleFunc("GET /new", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"path":%q,"remaining":%q}`, r.URL.Path, w.Header().Get("X-RateLimit-Remaining"))
		})
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 3, Period: time.Second,
			Headers: quotatest.XRateLimitDelta, Handler: mux})
		resp, err := p.Client().Get("http://api.example/old")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct{ Path, Remaining string }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		// Each hop is an arrival; the handler sees the provider's headers already set.
		if resp.StatusCode != 201 || got.Path != "/new" || got.Remaining != "1" {
			t.Errorf("got %d %+v, want 201 {Path:/new Remaining:1}", resp.StatusCode, got)
		}
		synctest.Wait()
		var statuses []int
		for _, a := range p.Arrivals() {
			statuses = append(statuses, a.Status)
		}
		if fmt.Sprint(statuses) != "[302 201]" {
			t.Errorf("recorded statuses %v, want [302 201]", statuses)
		}
	})
}

func TestBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tests := []struct {
			cfg       quotatest.Config
			body, typ string
		}{
			{quotatest.Config{}, "{\"ok\":true}\n", "application/json"},
			{quotatest.Config{BodySize: 16}, `{"pad":"aaaaaa"}`, "application/json"},
			{quotatest.Config{BodySize: 3}, "aaa", "text/plain; charset=utf-8"},
			{quotatest.Config{Body: []byte("<html></html>")}, "<html></html>", "text/html; charset=utf-8"},
		}
		for _, tt := range tests {
			tt.cfg.Requests, tt.cfg.Period = 1, time.Second
			r := fetch(t, quotatest.NewTestProvider(t, tt.cfg).Client(), http.MethodGet, api)
			if r.body != tt.body || r.header.Get("Content-Type") != tt.typ {
				t.Errorf("Body %q BodySize %d: got %q (%s), want %q (%s)",
					tt.cfg.Body, tt.cfg.BodySize, r.body, r.header.Get("Content-Type"), tt.body, tt.typ)
			}
		}
	})
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	ok := quotatest.Config{Requests: 1, Period: time.Second}
	tests := []struct {
		name string
		edit func(*quotatest.Config)
		want string // in the error
	}{
		{"no requests", func(c *quotatest.Config) { c.Requests = 0 }, "Requests"},
		{"negative period", func(c *quotatest.Config) { c.Period = -time.Second }, "Period"},
		{"interval under 1ns", func(c *quotatest.Config) { c.Requests, c.Period = 10, 5 }, "Period/Requests"},
		{"negative burst", func(c *quotatest.Config) { c.Burst = -1 }, "Burst"},
		{"burst with fixed window", func(c *quotatest.Config) { c.Burst, c.Algorithm = 2, quotatest.FixedWindow }, "Burst"},
		{"burst with sliding window", func(c *quotatest.Config) { c.Burst, c.Algorithm = 2, quotatest.SlidingWindow }, "Burst"},
		{"tokens with sliding window", func(c *quotatest.Config) { c.Tokens, c.Algorithm = 10, quotatest.SlidingWindow }, "Tokens"},
		{"reset rounding alone", func(c *quotatest.Config) { c.Headers = quotatest.RetryAfterSeconds | quotatest.ResetRoundedDown }, "Headers"},
		{"unknown algorithm", func(c *quotatest.Config) { c.Algorithm = 7 }, "Algorithm"},
		{"negative cap", func(c *quotatest.Config) { c.MaxConcurrent = -1 }, "MaxConcurrent"},
		{"status 500", func(c *quotatest.Config) { c.Status = 500 }, "Status"},
		{"two Retry-After forms", func(c *quotatest.Config) { c.Headers = quotatest.RetryAfterSeconds | quotatest.RetryAfterDate }, "Headers"},
		{"two X resets", func(c *quotatest.Config) { c.Headers = quotatest.XRateLimitDelta | quotatest.XRateLimitEpoch }, "Headers"},
		{"epoch and millis resets", func(c *quotatest.Config) { c.Headers = quotatest.XRateLimitEpoch | quotatest.XRateLimitEpochMillis }, "Headers"},
		{"delta and date resets", func(c *quotatest.Config) { c.Headers = quotatest.XRateLimitDelta | quotatest.XRateLimitDate }, "Headers"},
		{"two roundings", func(c *quotatest.Config) {
			c.Headers = quotatest.IETF | quotatest.ResetRoundedDown | quotatest.ResetRoundedNearest
		}, "Headers"},
		{"nearest rounding alone", func(c *quotatest.Config) { c.Headers = quotatest.RetryAfterSeconds | quotatest.ResetRoundedNearest }, "Headers"},
		{"burst with sliding log", func(c *quotatest.Config) { c.Burst, c.Algorithm = 2, quotatest.SlidingLog }, "Burst"},
		{"burst with first-request window", func(c *quotatest.Config) { c.Burst, c.Algorithm = 2, quotatest.FirstRequestWindow }, "Burst"},
		{"token bucket overflow", func(c *quotatest.Config) {
			c.Algorithm, c.Requests, c.Burst, c.Period = quotatest.TokenBucket, 1, 1<<40, 1<<30
		}, "Burst"},
		{"tokens with token bucket", func(c *quotatest.Config) { c.Tokens, c.Algorithm = 10, quotatest.TokenBucket }, "Tokens"},
		{"NoHeaders combined", func(c *quotatest.Config) { c.Headers = quotatest.NoHeaders | quotatest.IETF }, "Headers"},
		{"unknown style", func(c *quotatest.Config) { c.Headers = 1 << 20 }, "Headers"},
		{"negative latency", func(c *quotatest.Config) { c.Latency = -1 }, "Latency"},
		{"negative body size", func(c *quotatest.Config) { c.BodySize = -1 }, "BodySize"},
		{"body and size", func(c *quotatest.Config) { c.Body, c.BodySize = []byte("x"), 1 }, "Body"},
	}
	for _, tt := range tests {
		cfg := ok
		tt.edit(&cfg)
		_, err := quotatest.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "headgate: quotatest: ") {
			t.Errorf("%s: New() error = %v, want one naming %s", tt.name, err, tt.want)
		}
	}
	for _, status := range []int{403, 429, 503} {
		cfg := ok
		cfg.Status = status
		if _, err := quotatest.New(cfg); err != nil {
			t.Errorf("Status %d: %v", status, err)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{quotatest.GCRA.String(), "GCRA"},
		{quotatest.FixedWindow.String(), "FixedWindow"},
		{quotatest.SlidingWindow.String(), "SlidingWindow"},
		{quotatest.TokenBucket.String(), "TokenBucket"},
		{quotatest.SlidingLog.String(), "SlidingLog"},
		{quotatest.FirstRequestWindow.String(), "FirstRequestWindow"},
		{quotatest.Algorithm(9).String(), "Algorithm(9)"},
		{(quotatest.XRateLimitDate | quotatest.ResetRoundedNearest).String(), "XRateLimitDate|ResetRoundedNearest"},
		{quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Burst: 2, Algorithm: quotatest.TokenBucket}).String(),
			"quotatest.Provider(TokenBucket 5/1s burst 2, 429 RetryAfterSeconds)"},
		{quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Algorithm: quotatest.SlidingLog}).String(),
			"quotatest.Provider(SlidingLog 5/1s, 429 RetryAfterSeconds)"},
		{(quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown).String(), "XRateLimitEpoch|ResetRoundedDown"},
		{quotatest.HeaderStyle(0).String(), "RetryAfterSeconds"},
		{(quotatest.XRateLimitEpoch | quotatest.RetryAfterSeconds).String(), "RetryAfterSeconds|XRateLimitEpoch"},
		{quotatest.RefusedPause.String(), "RefusedPause"},
		{quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second}).String(),
			"quotatest.Provider(GCRA 5/1s burst 5, 429 RetryAfterSeconds)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
