package matrix

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// What a client can know of the end of a pause on "quotatest fixed ·
// GitHub-style epoch reset (rounded down) · no Retry-After": nothing finer
// than its second. That server's pause is quotatest's own (PauseFor), not
// the recorder's that fronts the limiter libraries: its refusals carry the
// style's headers only — Remaining 0 and a reset that is the pause's end as
// a Unix second rounded down — and no Retry-After. A pause that ends φ past
// the whole second R (0 ≤ φ < 1 s) answers every request, before R and at
// R, with the same status and headers whatever φ is (checked below), so a
// client sees the same responses and sends the same requests for every φ.
//
// Hence the bound. Say a client sends k requests in [R, R + 1 s) before
// one is admitted, at instants p₁ < … < p_k (the pause is over for sure
// at R + 1 s: p_{k+1} ≤ R + 1 s is the one admitted). For each φ the
// requests sent before R + φ are sent into the pause; the refused call's
// retry comes p_{i+1} − φ after the end for φ in [p_i, p_{i+1}). With φ
// just past p_i, that is the whole gap: some φ makes the retry at least
// (1 s)/(k + 1) late, or a request is sent into the pause. The issue's
// want — nothing into the pause, the retry within 20 ms — needs k = 0 and
// k ≥ 49 at once. On this server it is out of any client's reach; over
// loopback the matrix's figures for it depend on φ, which the run's start
// decides: a batch that bursts at a window's turn pauses a few ms past it
// (one probe into the pause, the retry within ~10 ms); one that paces
// through the window pauses 0.5–0.7 s past it (six or seven probes, the
// refused call's first retry as early: "−659 ms").
func TestRoundedDownPauseEndUnknowable(t *testing.T) {
	type answer struct {
		status int
		header http.Header
	}
	ask := func(p *quotatest.Provider) answer {
		req, _ := http.NewRequest(http.MethodGet, "http://quotatest.invalid/v1/items/1", nil)
		resp, err := p.Transport().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header.Clone()
		h.Del("Date")
		return answer{resp.StatusCode, h}
	}
	// The answers at 1.0, 1.5, 1.999 and 2.0 s past a whole second T0, to a
	// pause begun at T0 + φ, for 2 s: it ends at R + φ, R = T0 + 2 s.
	at := []time.Duration{time.Second, 1500 * time.Millisecond, 1999 * time.Millisecond, 2 * time.Second}
	var first []answer
	for _, phi := range []time.Duration{time.Millisecond, 300 * time.Millisecond, 660 * time.Millisecond, 999 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			time.Sleep(time.Until(virtualStart))
			p, err := quotatest.New(quotatest.Config{Requests: 100, Period: time.Second, Algorithm: quotatest.FixedWindow,
				Headers: quotatest.XRateLimitEpoch | quotatest.ResetRoundedDown})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			time.Sleep(phi)
			p.PauseFor(2 * time.Second)
			var got []answer
			for _, d := range at {
				time.Sleep(time.Until(t0.Add(d)))
				a := ask(p)
				if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "" {
					t.Fatalf("φ %v, at %v: %d, Retry-After %q; want a 429 with none", phi, d, a.status, a.header.Get("Retry-After"))
				}
				got = append(got, a)
			}
			if first == nil {
				first = got
				t.Logf("every pause refusal: %d %v", got[0].status, got[0].header)
				return
			}
			for i := range got {
				if got[i].status != first[i].status || !equalHeaders(got[i].header, first[i].header) {
					t.Errorf("φ %v, at %v: %d %v; with φ 1ms: %d %v — a client could tell them apart",
						phi, at[i], got[i].status, got[i].header, first[i].status, first[i].header)
				}
			}
		})
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
