// Package quotatest provides a fake rate-limited API provider for tests, in the spirit of
// net/http/httptest: a Provider enforces a real limit, answers over-limit requests the way
// real providers do (429, 503 or 403 with Retry-After, the IETF RateLimit fields or the
// X-RateLimit-* family), injects faults on demand, and records every arrival so a test can
// check how a client paced itself.
//
// # Model
//
// A Provider admits Requests per Period, by GCRA (the default: up to Burst back to back,
// then one every Period/Requests) or a token bucket (the same limit kept as a level), by
// fixed windows aligned to the clock or started by the first request after the last one
// ended, by a sliding-window counter over aligned windows (go-chi/httprate's model), or by
// a sliding log (the exact count of the last Period). Each request is decided the
// moment it arrives, in this order: a pending connection reset, a forced pause, the
// concurrency cap, the limiter. A refusal spends no quota. The arrival is recorded with the
// provider's clock (Config.Now, time.Now by default), its outcome and the number of requests
// in flight.
//
// Headers tell the exact time until a request would be admitted, always rounded up, so a
// client that waits what it was told is never early; only the quota's reset may be rounded
// down or to the nearest unit, on request (ResetRoundedDown, ResetRoundedNearest), as
// servers that write time.Unix() do, and stated as seconds from now, a Unix time in
// seconds or milliseconds, or a date. Admitted responses carry the limit,
// what remains and when it resets, for the styles that report them. See HeaderStyle and
// Provider for the numbers.
//
// Limiter is the same decision without the HTTP, a pure function of the instants it is
// given: what a server would admit, and when, for a schedule computed ahead.
//
// CheckTimes (and Provider.CheckPacing) verify a schedule against GCRA's bound: every window
// of length W holds at most burst + floor((W+slack)/interval) arrivals.
//
// # Two ways to serve
//
// Provider.Transport (or Provider.Client) serves requests in-process, with no network: it
// works inside a testing/synctest bubble, where time is virtual, so a test of 5 requests per
// second runs instantly and can assert exact instants. NewServer serves the same Provider over
// loopback for tests that need a real client and a real connection: keep-alive, hijacked and
// reset connections, bodies cut mid-stream.
//
// # Faults
//
// SetLatency, SetSlowBody, SetTruncatedBody, ResetConnections and PauseFor change the
// provider's behaviour at run time, safely from any goroutine; ClearFaults ends them all.
//
// # Quick start
//
// In a test, NewTestProvider builds the Provider and fails the test on an invalid Config:
//
//	func TestClientPaces(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second})
//			client := newClientUnderTest(p.Transport()) // e.g. a headgate budget over it
//			for range 20 {
//				resp, err := client.Get("http://api.example/v1/items")
//				if err != nil {
//					t.Fatal(err)
//				}
//				io.Copy(io.Discard, resp.Body)
//				resp.Body.Close()
//			}
//			if p.Refused() != 0 {
//				t.Errorf("%d requests refused", p.Refused())
//			}
//			if err := p.CheckPacing(5, 200*time.Millisecond, 0); err != nil {
//				t.Error(err)
//			}
//		})
//	}
//
// Over the network:
//
//	s, err := quotatest.NewServer(quotatest.Config{Requests: 100, Period: time.Minute, Headers: quotatest.IETF})
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer s.Close()
//	s.ResetConnections(1) // the next request's connection is reset
//	resp, err := s.Client().Get(s.URL + "/v1/items")
//
// The package uses the standard library only and does not depend on headgate's core.
package quotatest
