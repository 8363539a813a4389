package core_test

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// FuzzHostileFeedbackSequence feeds a budget a sequence of responses read
// from fuzzed bytes — TestHostileHeadersBoundedStall's hostile headers and
// clean 200s, one byte a draw — through the same eight callers in virtual
// time, then an honest server once the bytes run out, and checks what must
// hold for any sequence: while callers wait, no stretch without a request
// sent is longer than WithMaxPause plus one interval of the configured
// pace; no send breaks the configured rate and burst; no panic; every slot comes
// back.
func FuzzHostileFeedbackSequence(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("hostile headers, one byte a draw: status, families, values"))
	// Sequences spelled out, a response at a time (the bytes, in draw
	// order: latency, hostile or clean, then hostileResponse's choices).
	const (
		// 429, Retry-After: 3600, X-RateLimit-Remaining: 0, X-RateLimit-Reset: 86400.
		refusedForADay = "\x00\x01\x01\x00\x03\x03\x01\x00\x00\x00\x01\x00\x01\x04\x01\x01\x01\x01\x01"
		// 503, no header.
		bare503 = "\xff\x01\x02\x01\x01\x01\x01\x01\x01"
		// 503, RateLimit-Policy: "p";q=1.5;w=0, RateLimit: "p";r=1;t=1000000000000.
		shaped503 = "\xff\x01\x02\x01\x01\x01\x00\x06\x00\x02\x08\x01\x01\x01"
		// 200 (then 429), X-RateLimit-Limit: 20, X-RateLimit-Remaining: 0, X-RateLimit-Reset: 1.
		spent200 = "\x80\x01\x00\x01\x01\x00\x00\x01\x02\x01\x00\x00\x01\x01\x01\x01\x01\x01"
		spent429 = "\x80\x01\x01\x01\x01\x00\x00\x01\x02\x01\x00\x00\x01\x01\x01\x01\x01\x01"
		// 200, X-RateLimit-Limit: 20, X-RateLimit-Remaining: 19, X-RateLimit-Reset: 3600.
		wholeForAnHour = "\x80\x01\x00\x01\x01\x00\x04\x01\x02\x01\x00\x01\x03\x01\x01\x01\x01\x01"
		// 200, no header.
		clean200 = "\x80\x00\x00"
	)
	// A 2 s hold for a probe at the next paced turn; whichever call is the
	// probe, a bare 503 refuses it.
	f.Add([]byte(refusedForADay + strings.Repeat(bare503, 30)))
	// The same, the 503s reporting what remains with a reset far away (a
	// quota report's shape, its reset cut to WithMaxPause).
	f.Add([]byte(refusedForADay + strings.Repeat(shaped503, 30)))
	// The eight calls of the first burst report the quota spent; two probes
	// refused show windows; the window's probe finds it whole with an hour
	// to its reset, and the window's allowance is spent.
	f.Add([]byte(strings.Repeat(spent200, 8) + spent429 + spent429 + wholeForAnHour + strings.Repeat(clean200, 30)))
	// Long sequences of drawn bytes, as long as a seeded run's hostile
	// phase, for the mutator to start from. (38 and 232 reach probes
	// planned a window's stated interval away, the window reckoned from
	// far resets, the interval from small limits.)
	for _, i := range []uint64{0, 1, 2, 3, 38, 232} {
		rng := rand.New(rand.NewPCG(i, 0x68676174))
		data := make([]byte, 1024)
		for j := range data {
			data[j] = byte(rng.Uint64())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		synctest.Test(t, func(t *testing.T) {
			r := &byteDraws{b: data}
			res := runHostile(t, func(now time.Time) (int, http.Header, time.Duration, bool) {
				if len(r.b) == 0 {
					return 0, nil, 0, false
				}
				lat := time.Duration(r.Int64N(int64(hostileLatency)))
				if r.IntN(4) == 0 {
					status, h := cleanResponse(r)
					return status, h, lat, true
				}
				status, h := hostileResponse(r, now)
				return status, h, lat, true
			}, 0)
			res.checkBounded(t)
		})
	})
}

// byteDraws draws from fuzzed bytes, one byte a draw (so a mutated byte
// changes one choice); 0 once they run out.
type byteDraws struct{ b []byte }

func (d *byteDraws) next() int64 {
	if len(d.b) == 0 {
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return int64(x)
}

func (d *byteDraws) IntN(n int) int { return int(d.next()) % n }

func (d *byteDraws) Int64N(n int64) int64 { return d.next() * (n / 256) }
