package quota

import (
	"math/rand/v2"
	"testing"
)

func TestDbgNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var su simSetup
	for range 74 {
		su, _ = simDraw(rng)
	}
	dbgSend = func(m *Model, now int64) {
		if x := now - 10*Second; x > 1091*1e6 && x < 1092*1e6 {
			lo, hi := m.bounds(now, 1)
			b0, _ := m.bounds(now, 0)
			at, known := m.Next(now, 1, now)
			latest, guess, ok := m.win.bracket(m.window)
			t.Logf("%.4f lo %+.4f hi %+.4f before %+.4f at %+.4f known %+.4f guessSeq %d answered %d infl %d fresh{#%d rem %d} kind %v bracket %+.3f %+.3f %v", float64(x)/1e9, float64(lo-now)/1e9, float64(hi-now)/1e9, float64(b0-now)/1e9, float64(at-now)/1e9, float64(known-now)/1e9, m.guessSeq, m.answered, m.inFlight(), m.fresh.seq, m.fresh.remaining, m.kind, float64(latest-now)/1e9, float64(guess-now)/1e9, ok)
		}
	}
	simulate(su)
	dbgSend = nil
}
