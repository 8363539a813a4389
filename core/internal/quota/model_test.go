package quota_test

import (
	"math"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core/internal/quota"
)

// The rules of the package doc's table, each driven through Sent, Observe
// and Next as a budget drives them.

const (
	ms   = int64(1e6)
	t0   = 10 * quota.Second // (0 reads as "none" to the model)
	hour = 3600 * quota.Second
)

// newModel returns a model configured with interval and burst (0, 0: a learning
// budget's), with the default adaptive pace.
func newModel(interval, burst int64) *quota.Model {
	m := quota.New(quota.Config{Interval: interval, Burst: burst, MaxWait: hour, Decrease: 0.5, MinRate: 0.1, Increase: 0.1})
	return &m
}

// withoutPace returns a model configured with interval and burst and no
// adaptive pace.
func withoutPace(interval, burst int64) *quota.Model {
	m := quota.New(quota.Config{Interval: interval, Burst: burst, MaxWait: hour})
	return &m
}

// ok is an admitted answer reporting remaining of limit (-1, -1: no
// quota), sent and received at the given instants.
func ok(sent, recv int64, remaining, limit int) quota.Report {
	return quota.Report{Sent: sent, Recv: recv, Remaining: remaining, Limit: limit, Reset: -1}
}

// refused is a refusal stating wait (0: none) and no quota.
func refused(sent, recv, wait int64) quota.Report {
	return quota.Report{Sent: sent, Recv: recv, Refused: true, Remaining: -1, Limit: -1, Reset: -1, Wait: wait}
}

// next is when the j-th next request may go at now, the callers quiet
// since now.
func next(m *quota.Model, now, j int64) int64 {
	at, _ := m.Next(now, j, now)
	return at
}

func TestRemainingCoversTheNextRequests(t *testing.T) {
	m := newModel(100*ms, 10)
	m.Sent(t0, 1)
	m.Observe(refused(t0, t0+10*ms, 0)) // no quota reported: the pace is cut
	if m.Factor() >= 1 {
		t.Fatalf("factor %v after a refusal reporting no quota, want a cut", m.Factor())
	}
	m.Sent(t0+20*ms, 1)
	now := t0 + 30*ms
	m.Observe(ok(t0+20*ms, now, 50, 100))
	if at := next(m, now, 45); at != now {
		t.Errorf("the 45th next request with 50 left goes at %+d ms, want now", (at-now)/ms)
	}
	if at := next(m, now, 60); at <= now {
		t.Errorf("the 60th next request with 50 left goes now, want later")
	}
}

func TestOlderReportNeverOverrides(t *testing.T) {
	// (No pace: the 5 that others took between the reports would cut the
	// share, and the count here is of the reports alone.)
	m := withoutPace(quota.Second, 20) // (a slow pace: nothing returns meanwhile)
	m.Sent(t0, 1)
	m.Observe(ok(t0, t0+100*ms, 8, 20))
	m.Sent(t0+150*ms, 1)
	m.Sent(t0+160*ms, 1)
	m.Observe(ok(t0+160*ms, t0+260*ms, 3, 20)) // the later request, answered first
	now := t0 + 300*ms
	m.Observe(ok(t0+150*ms, now, 5, 20)) // the earlier one: the server decided it before
	if at := next(m, now, 3); at != now {
		t.Errorf("the 3rd next request with 3 left goes at %+d ms, want now", (at-now)/ms)
	}
	if at := next(m, now, 4); at <= now {
		t.Errorf("the 4th next request goes now: the older report (5 left) overrode the fresher (3)")
	}
}

func TestBucketPacesAtTheLikeliestRate(t *testing.T) {
	m := newModel(100*ms, 5)
	m.Sent(t0, 1)
	now := t0 + 100*ms // a round trip of 100 ms: decided at t0+50ms
	m.Observe(ok(t0, now, 0, 5))
	// Configured at 10/s and nothing bounds the rate below it: the next token comes
	// 100 ms after the decision, so a request sent at now (arriving 50 ms
	// later) finds it; the one after, 100 ms later.
	for j, want := range []int64{now, now + 100*ms, now + 200*ms} {
		if at := next(m, now, int64(j+1)); abs(at-want) > ms {
			t.Errorf("request %d goes at %+d ms, want %+d ms", j+1, (at-now)/ms, (want-now)/ms)
		}
	}
}

func TestStatedWaitIsKnown(t *testing.T) {
	m := newModel(10*ms, 10)
	m.Sent(t0, 1)
	now := t0 + 10*ms
	e := m.Observe(refused(t0, now, 3*quota.Second))
	if e.Pause != now+3*quota.Second || !e.KeepPlace {
		t.Fatalf("effect %+v, want a pause to +3s and the refused call's place reserved", e)
	}
	at, known := m.Next(now, 1, now)
	if at != now+3*quota.Second || known != at {
		t.Errorf("next at %+d ms, known %+d ms; want both the pause's end, +3000 ms", (at-now)/ms, (known-now)/ms)
	}
}

// wholeSecondRefusal has m, configured at 100/s, see 5 of 10 left, then
// the next request refused with a Retry-After of one second, and returns
// when that refusal came and what it changed.
func wholeSecondRefusal(m *quota.Model) (int64, quota.Effect) {
	m.Sent(t0, 1)
	m.Observe(ok(t0, t0+10*ms, 5, 10))
	m.Sent(t0+20*ms, 1)
	now := t0 + 30*ms
	return now, m.Observe(quota.Report{Sent: t0 + 20*ms, Recv: now, Refused: true, Remaining: 0, Limit: 10, Reset: -1, Wait: quota.Second})
}

func TestWholeSecondWaitIsABracket(t *testing.T) {
	m := newModel(10*ms, 10)
	now, e := wholeSecondRefusal(m)
	if e.Pause != 0 {
		t.Errorf("a whole-second wait paused to %+d ms: it may mean a few ms", (e.Pause-now)/ms)
	}
	at, known := m.Next(now, 1, now)
	if at >= now+quota.Second || known != now {
		t.Errorf("next at %+d ms, known %+d ms; want before the second ends, and nothing of it known", (at-now)/ms, (known-now)/ms)
	}
}

func TestAdmittedAfterThePauseEndsIt(t *testing.T) {
	m := newModel(10*ms, 10)
	m.Sent(t0, 2)
	m.Observe(refused(t0, t0+10*ms, 2*quota.Second))
	m.Sent(t0+2010*ms, 1)
	now := t0 + 2020*ms
	m.Observe(ok(t0+2010*ms, now, -1, -1))
	// The pause's other refusal, answered late, does not pause again.
	m.Observe(refused(t0, now+ms, 2*quota.Second))
	if at := next(m, now+ms, 1); at > now+ms {
		t.Errorf("after an admitted request the next goes at %+d ms, want now", (at-now-ms)/ms)
	}
}

func TestFirstBurstWaitsForTheFirstAnswer(t *testing.T) {
	m := newModel(10*ms, 10)
	m.ExpectAnswers()
	if r := m.Ready(t0, 10); r != 5 {
		t.Errorf("before any answer %d may go at once, want half the configured burst, 5", r)
	}
	m.Sent(t0, 5)
	if at := next(m, t0+ms, 1); at > t0+quota.Second {
		t.Errorf("the rest of the first burst waits until %+d ms for an answer, want by +1000 ms, when the first counts as lost", (at-t0)/ms)
	}
	now := t0 + 50*ms
	m.Observe(ok(t0, now, 5, 10)) // the server holds 5 more
	if r := m.Ready(now, 10); r < 4 {
		t.Errorf("after the first answer reported 5 left, %d may go, want the 4 the others in flight leave", r)
	}
	plain := newModel(10*ms, 10) // no Transport: no answers expected
	if r := plain.Ready(t0, 10); r != 10 {
		t.Errorf("with no answers expected %d may go at once, want the configured burst, 10", r)
	}
}

func TestLearningStartsWithOneRequest(t *testing.T) {
	m := newModel(0, 0)
	if r := m.Ready(t0, 100); r != 1 {
		t.Fatalf("configured with no rate, %d may go at first, want 1", r)
	}
	m.Sent(t0, 1)
	if r := m.Ready(t0, 100); r != 0 {
		t.Fatalf("configured with no rate, %d more go before the first answer, want 0", r)
	}
	now := t0 + 20*ms
	m.Observe(ok(t0, now, -1, -1))
	if r := m.Ready(now, 100); r != 2 {
		t.Errorf("after the first admitted, %d may go, want 2 (slow start)", r)
	}
	_, known := m.Next(now, 50, now)
	if known != now {
		t.Errorf("a learning budget's wait is known for %+d ms: a guess is never known", (known-now)/ms)
	}
}

func TestRefusedGuessesBackOff(t *testing.T) {
	m := newModel(0, 0)
	at := t0
	var gaps []int64
	for range 4 {
		go1 := next(m, at, 1)
		m.Sent(go1, 1)
		gaps = append(gaps, go1-at)
		at = go1 + ms
		m.Observe(refused(go1, at, 0))
	}
	for i := 2; i < len(gaps); i++ {
		if gaps[i] < 2*gaps[i-1] {
			t.Errorf("waits before the guesses %v: each after a refusal should be at least twice the one before", gaps)
			break
		}
	}
	if r := m.Ready(at+quota.Second, 10); r != 1 {
		t.Errorf("after refused guesses %d may go at once, want 1", r)
	}
}

func TestPaceCutsToTheAdmittedRate(t *testing.T) {
	m := newModel(10*ms, 10) // configured at 100/s; the server admits 25/s
	now := t0
	for i := range 40 {
		now = t0 + int64(i)*40*ms
		m.Sent(now, 1)
		m.Observe(ok(now, now+ms, -1, -1))
	}
	now += 40 * ms
	m.Sent(now, 1)
	m.Observe(refused(now, now+ms, 0))
	if f := m.Factor(); f > 0.26 || f < 0.2 {
		t.Errorf("factor %.3f after a refusal at a pace the server admitted at 25/s, want about 0.25", f)
	}
}

// firstBurst sends a learning model's first burst of n, 1 ms apart, over
// a 10 ms wire: the first half admitted, the rest refused. It returns
// when the last answer came.
func firstBurst(m *quota.Model, n int) int64 {
	for i := range n {
		m.Sent(t0+int64(i)*ms, 1)
	}
	for i := range n {
		sent := t0 + int64(i)*ms
		if i < n/2 {
			m.Observe(ok(sent, sent+10*ms, -1, -1))
		} else {
			m.Observe(refused(sent, sent+10*ms, 0))
		}
	}
	return t0 + int64(n)*ms + 10*ms
}

func TestLearningCutsToWhatCameBackBetweenRefusals(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)              // (admitted at 1000/s: the pace is cut to 500/s)
	sent := admitEvery(m, now, 8*ms, 250) // the server admits 125/s from then on
	sent += 50 * ms
	refuseAt(m, sent)
	// Empty at the first refusal and at this one: the 250 admitted
	// between came back between them.
	want := 250 / (float64(sent-(t0+15*ms)) / 1e9)
	if r, _ := m.Rate(); r < 0.95*want || r > 1.05*want {
		t.Errorf("learnt rate %.1f/s after the server admitted 125/s between two refusals, want %.1f/s", r, want)
	}
}

func TestLearningCutsNoDeeperThanMinRate(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)             // (admitted at 1000/s: the pace is cut to 500/s)
	now = admitEvery(m, now, 100*ms, 20) // the server admits 10/s from then on
	before, _ := m.Rate()
	refuseAt(m, now+50*ms)
	// What came back between the refusals is under a tenth of the pace
	// refused: the cut goes to MinRate (0.1) of it, the next refusal on.
	if r, _ := m.Rate(); r < 0.099*before || r > 0.101*before {
		t.Errorf("learnt rate %.1f/s after a refusal at %.1f/s, want MinRate of it, %.1f/s", r, before, 0.1*before)
	}
}

// admitEvery sends n requests, every gap after now, each admitted, and
// returns when the last went.
func admitEvery(m *quota.Model, now, gap int64, n int) int64 {
	for range n {
		now += gap
		m.Sent(now, 1)
		m.Observe(ok(now, now+10*ms, -1, -1))
	}
	return now
}

// refuseAt sends one request at sent, refused.
func refuseAt(m *quota.Model, sent int64) {
	m.Sent(sent, 1)
	m.Observe(refused(sent, sent+10*ms, 0))
}

func TestLearningRefillStartsAtTheLastCut(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)
	now = admitEvery(m, now, 5*ms, 200) // the server admits 200/s for a second
	refuseAt(m, now+10*ms)
	cut := now + 20*ms                   // (the cut, to ~200/s)
	now = admitEvery(m, cut, 14*ms, 143) // then ~71/s for two seconds
	refuseAt(m, now+10*ms)
	// What came back since the last cut: 143 in 2 s. Counted from the
	// first refusal, the 200/s before would lift it to ~114/s.
	if r, _ := m.Rate(); r < 68 || r > 74 {
		t.Errorf("learnt rate %.1f/s after the server admitted 71/s since the last cut, want about 71/s", r)
	}
}

func TestLearningGrowsNothingBeforeItsFirstCut(t *testing.T) {
	m := newModel(0, 0)
	restored := 0
	for i := range 600 { // a minute of answers admitted, none refused
		sent := t0 + int64(i)*100*ms
		m.Sent(sent, 1)
		if m.Observe(ok(sent, sent+10*ms, -1, -1)).Restored {
			restored++
		}
	}
	if f := m.Factor(); f != 1 || restored != 0 {
		t.Errorf("factor %.2f (restored %d times) after a minute of answers and no refusal, want 1: nothing to grow back from", f, restored)
	}
}

func TestLearningPaceNeverOverflows(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)
	for range 60 { // one admitted between refusals, each a cut, sent without waiting
		m.Sent(now, 1)
		m.Observe(ok(now, now+ms, -1, -1))
		refuseAt(m, now+ms)
		now += 20 * ms
	}
	m.Sent(now, 1)
	m.Observe(ok(now, now+ms, -1, -1)) // (admitted: the pace, not a backoff, holds the next)
	now += 2 * ms
	r, _ := m.Rate()
	at1, at2 := next(m, now, 1), next(m, now, 2)
	if !(r > 0) || math.IsInf(r, 0) || at2 <= now || at1 > now+hour {
		t.Errorf("after 60 cuts the rate is %g/s and the next two go at %+d and %+d ms, want a positive rate and a pace that still holds them, within MaxWait", r, (at1-now)/ms, (at2-now)/ms)
	}
}

func TestLearningShareIsNeverMoreThanTheQuota(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)
	now = admitEvery(m, now, 10*ms, 1500) // 15 s admitted: the pace grows past the one refused
	// Then the server reports its quota, and others spend from it: 20
	// fewer left across one request of this budget's.
	now += quota.Second
	m.Sent(now, 1)
	m.Observe(ok(now, now+10*ms, 900, 1000))
	now += 20 * ms
	m.Sent(now, 1)
	m.Observe(ok(now, now+10*ms, 880, 1000))
	now += 20 * ms
	if r := m.Ready(now, 100000); r > 880 {
		t.Errorf("%d may go at once with 880 left and others spending, want no more than what is left", r)
	}
}

func TestLearningCutsOnceUntilOneIsAdmitted(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10)
	cut, _ := m.Rate()
	for _, wait := range []int64{100 * ms, 300 * ms, 700 * ms} {
		sent := now + wait
		m.Sent(sent, 1)
		m.Observe(refused(sent, sent+10*ms, 0))
		if r, _ := m.Rate(); r != cut {
			t.Fatalf("learnt rate %.1f/s after a guess refused %d ms after the cut, nothing admitted since; want the cut's %.1f/s", r, wait/ms, cut)
		}
	}
}

func TestLearningPaceGrowsPastThePaceRefused(t *testing.T) {
	m := newModel(0, 0)
	now := firstBurst(m, 10) // (refused at 1000/s)
	restored := 0
	for i := range 1200 { // then 12 s of answers admitted
		sent := now + int64(i)*10*ms
		m.Sent(sent, 1)
		if m.Observe(ok(sent, sent+10*ms, -1, -1)).Restored {
			restored++
		}
	}
	if r, _ := m.Rate(); r < 1500 {
		t.Errorf("learnt rate %.0f/s after 12 s admitted since a refusal at 1000/s, want it past 1000/s (nothing bounds it but the next refusal)", r)
	}
	if restored != 1 {
		t.Errorf("the pace was restored %d times climbing back past the pace refused, want once (each is a RateChanged event)", restored)
	}
	admitEvery(m, now+12*quota.Second, 100*ms, 600) // a quiet minute more
	if r, _ := m.Rate(); r > 10010 {
		t.Errorf("learnt rate %.0f/s after a quiet minute more, want no more than 1/MinRate of the 1000/s refused", r)
	}
}

func TestRefusedRoundEndsSlowStartAtHalf(t *testing.T) {
	mm := quota.New(quota.Config{MaxWait: hour}) // configured with no rate, no adaptive pace: the guesses are all there is
	m := &mm
	now := t0
	for m.Ready(now, 64) < 16 { // slow start, until 16 may go
		n := m.Ready(now, 64)
		for range n {
			m.Sent(now, 1)
		}
		for range n {
			m.Observe(ok(now, now+10*ms, -1, -1))
		}
		now += 20 * ms
	}
	m.Sent(now, 16)
	m.Observe(refused(now, now+10*ms, 0)) // 16 out: slow start now ends at 8
	for range 15 {
		m.Observe(refused(now, now+10*ms, 0))
	}
	for range 2 { // the backoff's probes, refused alone, leave it at 8
		now = next(m, now+10*ms, 1)
		refuseAt(m, now)
	}
	now += quota.Second
	for range 6 { // guesses admitted one at a time
		now = next(m, now, 1)
		m.Sent(now, 1)
		m.Observe(ok(now, now+10*ms, -1, -1))
		now += 20 * ms
	}
	if r := m.Ready(now, 64); r < 8 || r > 9 {
		t.Errorf("%d guesses may go after a refusal with 16 out and six admitted since, want 8 or 9: slow start to half, then one more a window", r)
	}
}

func TestNoQuotaRefusalProbesBack(t *testing.T) {
	m := withoutPace(10*ms, 8)
	m.Sent(t0, 8)
	for i := range 8 {
		m.Observe(ok(t0, t0+ms+int64(i), -1, -1))
	}
	now := t0 + 2*quota.Second
	m.Sent(now, 1)
	m.Observe(refused(now, now+ms, 0))
	now += 100 * ms
	if r := m.Ready(now, 8); r != 1 {
		t.Fatalf("after a refusal reporting no quota %d may go at once, want one guess", r)
	}
	m.Sent(now, 1)
	m.Observe(ok(now, now+ms, -1, -1))
	now += 2 * ms
	if r := m.Ready(now, 8); r >= 8 {
		t.Errorf("after one guess admitted the configured burst (%d) goes at once, want the window to grow back first", r)
	}
}

func TestMaxWaitBoundsEveryWait(t *testing.T) {
	m := quota.New(quota.Config{Interval: 10 * ms, Burst: 10, MaxWait: 2 * quota.Second})
	m.Sent(t0, 1)
	now := t0 + 10*ms
	m.Observe(refused(t0, now, hour)) // a pause of an hour, capped by nobody
	at, known := m.Next(now, 1, now)
	if at > now+2*quota.Second || known > at {
		t.Errorf("next at %+d ms (known %+d ms), want within MaxWait, 2 s", (at-now)/ms, (known-now)/ms)
	}
}

func TestForeignSpendTakesAShare(t *testing.T) {
	m := newModel(10*ms, 100)
	m.Sent(t0, 1)
	m.Observe(ok(t0, t0+10*ms, 90, 100))
	m.Sent(t0+20*ms, 1)
	now := t0 + 30*ms
	m.Observe(ok(t0+20*ms, now, 60, 100)) // 29 gone that were not ours
	m.Sent(now, 1)
	m.Observe(refused(now, now+ms, 0)) // contention: the share is cut
	m.Sent(now+2*ms, 1)
	now += 3 * ms
	m.Observe(ok(now-ms, now, 60, 100))
	if r := m.Ready(now, 100); r >= 59 {
		t.Errorf("%d of the 60 left may go at once with others spending, want a share", r)
	}
}

func TestBurstShowsOthersSpend(t *testing.T) {
	for _, c := range []struct {
		name string
		left []int
		want float64
	}{
		{"alone", []int{9, 8, 7, 6}, 1},
		{"others took 3 between them", []int{9, 7, 4, 3}, 3.0 / 5}, // (shown once three are in: two tokens unexplained)
	} {
		m := newModel(10*ms, 20)
		m.Sent(t0, len(c.left)) // at one instant: the server decides them in any order
		for _, left := range c.left {
			m.Observe(ok(t0, t0+50*ms, left, 20))
		}
		if f := m.Share(); math.Abs(f-c.want) > 0.01 {
			t.Errorf("%s: Remaining %v: share %.3f, want %.3f", c.name, c.left, f, c.want)
		}
	}
}

func TestBurstCountsOwnRequestsDecidedAmongIt(t *testing.T) {
	for _, c := range []struct {
		name         string
		burst, other int64 // when the burst and two more of ours were sent
	}{
		{"two sent after it, before its answers", t0, t0 + ms},
		{"two sent before it, answered after", t0 + ms, t0},
	} {
		m := newModel(10*ms, 20)
		m.Sent(min(c.burst, c.other), 2)
		m.Sent(max(c.burst, c.other), 2)
		m.Observe(ok(c.burst, t0+50*ms, 9, 20))
		m.Observe(ok(c.burst, t0+50*ms, 6, 20)) // 9 and 6: the two between may be ours
		if f := m.Share(); f != 1 {
			t.Errorf("%s: share %.3f alone on the quota, want the whole", c.name, f)
		}
	}
}

func TestShareIsOwnPartOfWhatWasSpent(t *testing.T) {
	m := newModel(quota.Second, 1000) // (a slow rate: little returns between reports)
	now, left := t0, 900
	round := func(others int) {
		left -= 1 + others
		m.Sent(now, 1)
		now += 10 * ms
		m.Observe(ok(now-10*ms, now, left, 1000))
	}
	for range 40 {
		round(3) // each report: one token of ours, three of others'
	}
	if f := m.Share(); math.Abs(f-0.25) > 0.03 {
		t.Errorf("share %.3f while others spend three tokens to our one, want 0.25", f)
	}
	for range 40 {
		round(0) // the others stopped
	}
	if f, p := m.Share(), m.Factor(); f < 0.95 || p < 0.95 {
		t.Errorf("share %.3f, pace factor %.3f once others stopped spending, want the whole", f, p)
	}
}

func TestCertainRefusalCapsTheRate(t *testing.T) {
	m := newModel(10*ms, 5) // configured at 100/s
	m.Sent(t0, 2)           // both certain of a token: the burst
	m.Observe(ok(t0, t0+10*ms, 4, 5))
	before, _ := m.Rate()
	m.Observe(quota.Report{Sent: t0, Recv: t0 + 11*ms, Refused: true, Remaining: 0, Limit: 5, Reset: -1})
	after, _ := m.Rate()
	if after > before*0.6 {
		t.Errorf("rate %.1f/s after a certain request was refused, was %.1f/s: want it about halved", after, before)
	}
}

func TestStatedResetBoundsABucket(t *testing.T) {
	m := newModel(0, 0)
	m.Sent(t0, 1)
	// A bucket of 10, 9 short, full again in 900 ms (stated to the ms):
	// it refills 10/s.
	m.Observe(quota.Report{Sent: t0, Recv: t0 + 2*ms, Remaining: 1, Limit: 10, Reset: 900 * ms, Resolution: ms})
	lo, hi := m.RateBounds()
	if lo < 8 || hi > 11 {
		t.Errorf("rate bounds [%.1f, %.1f] from a reset of 900 ms for 9 tokens, want about 10", lo, hi)
	}
}

func abs(d int64) int64 { return int64(math.Abs(float64(d))) }

func TestLostAnswersFreeTheGuesses(t *testing.T) {
	m := newModel(0, 0) // every request a guess, one at a time at first
	m.Sent(t0, 1)
	if r := m.Ready(t0+ms, 10); r != 0 {
		t.Fatalf("%d may go while the first guess is out, want 0", r)
	}
	m.Lost(t0, t0+2*ms) // a connection reset: no answer will come
	if r := m.Ready(t0+3*ms, 10); r == 0 {
		t.Errorf("after the guess was lost nothing may go, want a guess")
	}
	m.Sent(t0+3*ms, 1) // its answer never reported (a permit released unobserved)
	if r := m.Ready(t0+3*ms+2*quota.Second, 10); r == 0 {
		t.Errorf("2 s after a guess whose answer never came nothing may go, want a guess")
	}
}

func TestStatedWaitBoundsTheBackoff(t *testing.T) {
	for _, wait := range []int64{300 * ms, quota.Second} { // (a second: a bracket, maybe rounded up)
		m := newModel(10*ms, 10)
		at, bound := t0, int64(0)
		for i := range 12 {
			go1 := next(m, at, 1)
			if i > 0 && go1 > bound+ms {
				t.Fatalf("Retry-After %d ms each time: guess %d at %+d ms past the end the last refusal stated", wait/ms, i+1, (go1-bound)/ms)
			}
			m.Sent(go1, 1)
			at = go1 + ms
			m.Observe(refused(go1, at, wait))
			bound = at + wait
		}
	}
}

func TestRefusedInsideABracketWaitsForItsEnd(t *testing.T) {
	m := newModel(10*ms, 10)
	first, _ := wholeSecondRefusal(m)
	probe := next(m, first, 1)
	if probe >= first+quota.Second {
		t.Fatalf("no probe inside the bracket: next at %+d ms", (probe-first)/ms)
	}
	m.Sent(probe, 1)
	now := probe + ms
	e := m.Observe(quota.Report{Sent: probe, Recv: now, Refused: true, Remaining: 0, Limit: 10, Reset: -1, Wait: quota.Second})
	if e.Pause != first+quota.Second {
		t.Errorf("pause to %+d ms once a probe inside the bracket was refused, want its end, +1000 ms", (e.Pause-first)/ms)
	}
	if at, known := m.Next(now, 1, now); at < first+quota.Second || known != first+quota.Second {
		t.Errorf("next at %+d ms, known to %+d ms; want the first bracket's end, +1000 ms, known", (at-first)/ms, (known-first)/ms)
	}
}

func TestPauseRefusalIsNotOthersSpend(t *testing.T) {
	m := newModel(10*ms, 50)
	m.Sent(t0, 1)
	m.Observe(ok(t0, t0+ms, 40, 50))
	m.Sent(t0+2*ms, 1)
	// A refusal that states a wait and no quota: the server paused, and
	// says nothing of what is left.
	m.Observe(refused(t0+2*ms, t0+3*ms, 2*quota.Second))
	if f := m.Share(); f != 1 {
		t.Errorf("share %.2f after a pause's refusal, want the whole: no one else spent", f)
	}
}

func TestStatedWaitLetsOneGoAtItsEnd(t *testing.T) {
	m := newModel(100*ms, 10)
	m.Sent(t0, 1)
	// A quota of 10 whole in 60 s (one per 6 s, by the readings), and
	// the server says one more goes within a second.
	r := refused(t0, t0+ms, quota.Second)
	r.Remaining, r.Limit, r.Reset = 0, 10, 60*quota.Second
	m.Observe(r)
	if at := next(m, t0+ms, 1); at > t0+ms+quota.Second {
		t.Errorf("the next goes at %+d ms, want by the stated wait's end, +1000 ms", (at-t0-ms)/ms)
	}
}

func TestUnansweredGuessWakesTheNext(t *testing.T) {
	m := newModel(0, 0) // every request a guess, one at a time at first
	m.Sent(t0, 1)
	at, _ := m.Next(t0+ms, 1, t0+ms)
	if at > t0+quota.Second {
		t.Errorf("the next waits until %+d ms for a guess whose answer may never come, want by +1000 ms, when it counts as lost", (at-t0)/ms)
	}
}

func TestRefusalOfAnUnknownSendIsNeverStale(t *testing.T) {
	m := newModel(10*ms, 10)
	m.Sent(t0, 1)
	m.Observe(ok(t0, t0+ms, -1, -1))
	now := t0 + 2*ms
	m.Observe(refused(0, now, 60*quota.Second)) // sent: not known
	if at := next(m, now, 1); at != now+60*quota.Second {
		t.Errorf("after a refusal of a request sent at an unknown time, the next goes at %+d ms, want at its stated wait's end, +60000 ms", (at-now)/ms)
	}
}

func TestGuessesRefusedAtOneInstantAreOneRound(t *testing.T) {
	m := newModel(10*ms, 100)
	now := t0
	m.Sent(now, 1)
	m.Observe(refused(now, now, 0)) // no quota reported: every request a guess from here
	for range 6 {                   // admitted guesses grow the window
		now = next(m, now, 1)
		n := m.Ready(now, 64)
		for range n {
			m.Sent(now, 1)
		}
		for range n {
			m.Observe(ok(now, now, -1, -1))
		}
	}
	now += quota.Second
	n := m.Ready(now, 64)
	if n < 8 {
		t.Fatalf("%d guesses may go at once after admitted rounds, want 8 or more", n)
	}
	for range n {
		m.Sent(now, 1)
	}
	for range n { // a wire with no latency: every answer at the instant they left
		m.Observe(refused(now, now, 0))
	}
	// One round: the backoff is one configured interval, and the pace the
	// refusals cut holds the next guess a little longer; counted as n
	// rounds, the backoff would double n times.
	if at := next(m, now, 1); at > now+quota.Second {
		t.Errorf("after %d guesses refused at one instant the next goes at %+d ms, want within a second (one round's backoff and the cut pace)", n, (at-now)/ms)
	}
}

// refusedPastTheBurst feeds m, configured with interval iv and burst, a server that
// reports no quota: the whole burst sent at t0, the first admitted of it
// admitted and the rest refused, then two more at the configured interval
// refused, stating wait — more than the burst in its span.
func refusedPastTheBurst(m *quota.Model, iv, burst int64, admitted int, wait int64) {
	m.Sent(t0, int(burst))
	for i := range int(burst) {
		m.Observe(quota.Report{Sent: t0, Recv: t0 + 100*ms + int64(i), Refused: i >= admitted, Remaining: -1, Limit: -1, Reset: -1})
	}
	for i := range int64(2) {
		m.Sent(t0+(i+1)*iv, 1)
	}
	for i := range int64(2) {
		m.Observe(refused(t0+(i+1)*iv, t0+(i+1)*iv+100*ms, wait))
	}
}

func TestRefusalPastTheBurstReadsTheConfiguredRateAsSpans(t *testing.T) {
	// Configured at 44 per 3 s (a sliding log's), which reports no quota: the whole
	// burst at once is admitted, the next two, at the configured interval,
	// refused — a bucket at the configured rate would have admitted them. Then
	// the pace grows back while requests go at the configured interval for two
	// seconds.
	const burst = 44
	iv := 3 * quota.Second / burst
	m := newModel(iv, burst)
	refusedPastTheBurst(m, iv, burst, burst, 3*quota.Second)
	now := t0 + 3500*ms
	sent := 0
	for ; now < t0+5500*ms; now += iv {
		m.Sent(now, 1)
		m.Observe(ok(now, now+ms, -1, -1))
		sent++
	}
	if f := m.Factor(); f < 0.9 {
		t.Fatalf("factor %.2f after %d admitted in a row, want it grown back near 1", f, sent)
	}
	// In the span of 3 s before now, sent were sent: burst - sent more
	// may go at once, not the whole burst.
	free := 0
	for j := int64(1); j <= burst && next(m, now, j) <= now; j++ {
		free++
	}
	if free > burst-sent {
		t.Errorf("%d may go at once with %d sent in the last 3 s, want at most %d", free, sent, burst-sent)
	}
}

func TestSpansLetThePaceGoOn(t *testing.T) {
	// Configured at 88 per 3 s, twice a sliding counter's 44: half the configured burst
	// admitted, the rest refused, and two more at the configured interval: the
	// span admitted 44. Past a span's 44 the pace goes on at its interval — a
	// sliding counter returns its quota gradually — not held until the
	// span's first turns 3 s old. (The requests after it are guesses,
	// each after the answer to the one before: TestRefusedGuessesBackOff.)
	const burst = 88
	iv := 3 * quota.Second / burst
	m := newModel(iv, burst)
	refusedPastTheBurst(m, iv, burst, burst/2, 0)
	now := t0 + 200*ms
	at := next(m, now, 1)
	if paced := now + int64(float64(iv)/m.Factor()); at > paced+ms {
		t.Errorf("the next goes at %+d ms, want at the pace, about %+d ms: the span's 44 spent, the pace still goes on", (at-now)/ms, (paced-now)/ms)
	}
}

func TestSharedWindowsSpreadWhatIsLeftWhileOthersSpend(t *testing.T) {
	m := newModel(10*ms, 100) // configured at 100/s, the window's limit
	win := func(sent, recv int64, left int, turn int64) quota.Report {
		return quota.Report{Sent: sent, Recv: recv, Remaining: left, Limit: 100, Reset: turn - recv, Resolution: ms}
	}
	turn := t0 + quota.Second
	m.Sent(t0, 1)
	m.Observe(win(t0, t0+2*ms, 99, turn))
	m.Sent(t0+100*ms, 1)
	m.Observe(win(t0+100*ms, t0+102*ms, 60, turn)) // 38 gone that were not ours
	now := turn + 10*ms
	m.Sent(now, 1)
	m.Observe(win(now, now+2*ms, 99, turn+quota.Second)) // the window turned: the limit back
	now += 2 * ms
	if m.Kind() != quota.Windows {
		t.Fatalf("kind %v after the whole limit came back at once, want windows", m.Kind())
	}
	if at := next(m, now, 1); at > now+20*ms {
		t.Errorf("the next request waits %v with 99 left, want it to go", time.Duration(at-now))
	}
	// Others spend from the same window: what is left is spread until
	// it turns, not taken at once.
	if at := next(m, now, 50); at < now+400*ms {
		t.Errorf("the 50th next request goes in %v with 99 left and the turn 1s away, want it spread (about 500ms)", time.Duration(at-now))
	}
	// The others stop: each report shows only this budget's own spend.
	for left := 98; left >= 96; left-- {
		now += 10 * ms
		m.Sent(now, 1)
		m.Observe(win(now, now+2*ms, left, turn+quota.Second))
	}
	now += 2 * ms
	if at := next(m, now, 50); at > now {
		t.Errorf("the 50th next request waits %v with 96 left and no one else spending, want it to go", time.Duration(at-now))
	}
}

func TestAnswerReadBeforeASendOrdersThem(t *testing.T) {
	m := newModel(10*ms, 100)
	m.Sent(t0, 1)
	now := t0 + 10*ms
	m.Observe(ok(t0, now, 90, 100))
	// Sent at the instant the answer came, once it was read: decided
	// after it, and refused with 89 counted left — others took them.
	m.Sent(now, 1)
	m.Observe(quota.Report{Sent: now, Recv: now + 10*ms, Refused: true, Remaining: 0, Limit: 100, Reset: -1})
	now += 20 * ms
	m.Sent(now, 1)
	m.Observe(ok(now, now+ms, 60, 100))
	now += ms
	if r := m.Ready(now, 100); r >= 59 {
		t.Errorf("%d of the 60 left may go at once with others spending, want a share", r)
	}
}

func TestCertainRefusalCapsTowardWhatCameBack(t *testing.T) {
	m := newModel(10*ms, 100) // configured at 100/s
	// A bucket of 100 that states its reset as a bucket's: full again in
	// a second, at 100/s. Others spend from it: every 20 ms a request of
	// this budget's finds none left but its own; one is in flight at each
	// answer, too few came back yet to measure the rate by.
	bucket := func(sent, recv int64, refused bool) quota.Report {
		return quota.Report{Sent: sent, Recv: recv, Refused: refused, Remaining: 0, Limit: 100, Reset: quota.Second, Resolution: ms}
	}
	now := t0
	m.Sent(now, 1)
	for range 8 {
		m.Sent(now+20*ms, 1)
		m.Observe(bucket(now, now+30*ms, false))
		now += 20 * ms
	}
	m.Observe(bucket(now, now+30*ms, false))
	now += 30 * ms
	before, _ := m.Rate()
	if lo, _ := m.RateBounds(); lo < 90 {
		t.Fatalf("rate's lower bound %.1f/s, want the stated reset's 100/s", lo)
	}
	if next(m, now, 1) > now {
		t.Fatalf("the next request waits at %.0f/s, want it certain of its token now", before)
	}
	m.Sent(now, 1)
	m.Observe(bucket(now, now+30*ms, true))
	after, _ := m.Rate()
	if after > 0.8*before {
		t.Errorf("rate %.1f/s after a certain request was refused, was %.1f/s: want it capped toward what came back, not held by the stated reset's 100/s (what the server returns, not what is left of it for this budget)", after, before)
	}
}
