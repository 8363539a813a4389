package quota

import "testing"

func TestDbgNext(t *testing.T) {
	ms := int64(1e6)
	su := simSetup{server: simServer{alg: simGCRA, limit: 10, interval: 10 * ms, window: Second, reset: resetCeil, retryAfter: true},
		told: 5 * ms, burst: 20, calls: 500, callers: 100, tries: 6, maxWait: 3600 * Second, owd: 30 * ms, jitter: 6 * ms, seed: 1}
	simCheck = func(m *Model, at int64, r *simReq) {}
	simTrace = func(f string, a ...any) {}
	dbgSend = func(m *Model, now int64) {
		if now-10*Second > 2040*ms && now-10*Second < 2046*ms {
			lo, hi := m.bounds(now, 1)
			t.Logf("%.4f lo %+.4f hi %+.4f guessSeq %d answered %d infl %d pause %+.3f %+.3f", float64(now)/1e9-10, float64(lo-now)/1e9, float64(hi-now)/1e9, m.guessSeq, m.answered, m.inFlight(), float64(m.pauseLo-now)/1e9, float64(m.pauseHi-now)/1e9)
		}
	}
	simulate(su)
	simCheck, simTrace, dbgSend = nil, nil, nil
}
