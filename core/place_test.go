package core

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// A call refused by a server pause keeps its place: its retry goes first
// when the pause ends, ahead of the callers that queued during it, whether
// the retry waits for the pause (resty, go-retryablehttp) or comes back at
// once (go-kit's lb.Retry); when no retry comes, the others lose at most
// one interval.
func TestRefusedCallKeepsItsPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry func(b *Budget) // before the retry; nil: no retry
		slots int             // WithMaxInFlight; 0: none
	}{
		{"retry when the pause ends", func(b *Budget) { time.Sleep(b.PauseRemaining()) }, 0},
		{"retry at once", func(*Budget) {}, 0},
		{"no retry", nil, 0},
		// With a cap, the place keeps a slot too: the callers that queued
		// hold every other one.
		{"retry when the pause ends, 2 slots", func(b *Budget) { time.Sleep(b.PauseRemaining()) }, 2},
		{"retry at once, 2 slots", func(*Budget) {}, 2},
		{"no retry, 2 slots", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second, Headers: quotatest.RetryAfterSeconds})
				if err != nil {
					t.Fatal(err)
				}
				b := MustBudget(PerSecond(10), WithBurst(1), WithoutAdaptive(), WithMaxInFlight(tc.slots))
				get := getter(t, p, b)
				start := time.Now()
				p.PauseFor(2 * time.Second)
				if st := get("/refused"); st != http.StatusTooManyRequests {
					t.Fatalf("status %d, want the pause's 429", st)
				}
				var wg sync.WaitGroup
				for range 5 { // callers that arrive during the pause
					wg.Go(func() {
						time.Sleep(time.Millisecond)
						get("/other")
					})
				}
				if tc.retry != nil {
					tc.retry(b)
					if st := get("/refused"); st != http.StatusOK {
						t.Errorf("retry: status %d", st)
					}
				}
				wg.Wait()
				var retry, first time.Duration
				for _, a := range p.Arrivals() {
					switch {
					case a.Path == "/refused" && a.Outcome == quotatest.Admitted:
						retry = a.At.Sub(start)
					case a.Path == "/other" && first == 0:
						first = a.At.Sub(start)
					}
				}
				t.Logf("retry at %v, first other at %v", retry, first)
				switch {
				case tc.retry != nil && (retry != 2*time.Second || first != 2100*time.Millisecond):
					t.Errorf("retry at %v, first other caller at %v; want the retry at the pause's end (2s), the others after it", retry, first)
				case tc.retry == nil && first != 2*time.Second+time.Duration(maxPlaceGrace):
					t.Errorf("first other caller at %v; want it when the place is given up (%v)", first, 2*time.Second+time.Duration(maxPlaceGrace))
				}
				if n := b.InFlight(); n != 0 {
					t.Errorf("InFlight = %d after every call, want 0: a reserved place leaked its slot", n)
				}
			})
		})
	}
}

// A reserved place is for the refused request: a caller with another request
// that arrives as the pause ends (its worker just got an answer) queues
// behind the places instead of taking one, so every refused call's retry
// still goes first — on a windowed server the one left without a place
// would wait for the next window.
func TestReservedPlaceIsForTheRefusedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second, Headers: quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		b := MustBudget(PerSecond(10), WithBurst(3), WithoutAdaptive())
		get := getter(t, p, b)
		warmUp(t, get)
		p.PauseFor(2 * time.Second)
		p.SetLatency(time.Millisecond) // the burst is on its way together
		refused := []string{"/refused/1", "/refused/2", "/refused/3"}
		var wg sync.WaitGroup
		for _, path := range refused { // a burst the pause refuses
			wg.Go(func() {
				if st := get(path); st != http.StatusTooManyRequests {
					t.Errorf("%s: status %d, want the pause's 429", path, st)
				}
				time.Sleep(b.PauseRemaining() + time.Millisecond) // a retry layer a little late
				get(path)
			})
		}
		time.Sleep(2 * time.Millisecond)
		p.SetLatency(0)
		end := time.Now().Add(b.PauseRemaining())
		for range 3 { // callers that arrive during the pause
			wg.Go(func() { get("/queued") })
		}
		wg.Go(func() { // a caller that arrives just as the pause ends
			time.Sleep(time.Until(end))
			get("/fresh")
		})
		wg.Wait()
		firstAfter := map[string]time.Duration{}
		for _, a := range p.Arrivals() {
			if at := a.At.Sub(end); at >= 0 {
				if _, ok := firstAfter[a.Path]; !ok {
					firstAfter[a.Path] = at
				}
			}
		}
		t.Logf("first arrivals after the pause: %v", firstAfter)
		for _, path := range refused {
			if at := firstAfter[path]; at != time.Millisecond {
				t.Errorf("%s retried %v after the pause's end, want 1ms: its place was taken", path, at)
			}
		}
		if at := firstAfter["/fresh"]; at <= time.Millisecond {
			t.Errorf("/fresh went at %v, before the refused calls' retries", at)
		}
	})
}

// A pause whose end only a rounded-down reset tells (no Retry-After) goes
// on past it: one refused call's retry is the probe at the reset, refused
// again, and keeps its place for the next probe; when the pause is over it
// goes first, ahead of the callers that queued meanwhile, within one probe
// gap of the pause's end, and no one else goes into the pause — not even
// the other calls of a burst the pause refused, whose retries go next,
// before the callers that queued (each kept its place behind the probe's).
func TestRefusedCallKeepsItsPlaceWhileThePauseOverrunsItsReset(t *testing.T) {
	t.Skip("quota: refusals reporting 0 left and a reset (no Retry-After) read as a bucket refilling at >= limit/reset: 13-15 requests into a 2.05s pause")
	for _, refused := range [][]string{{"/refused/1"}, {"/refused/1", "/refused/2", "/refused/3"}} {
		t.Run(fmt.Sprintf("%d refused", len(refused)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second,
					Headers: quotatest.XRateLimitDelta | quotatest.ResetRoundedDown})
				if err != nil {
					t.Fatal(err)
				}
				b := MustBudget(PerSecond(10), WithBurst(3), WithoutAdaptive())
				get := getter(t, p, b)
				start := time.Now()
				end := start.Add(2*time.Second + 50*time.Millisecond) // "2" seconds, rounded down
				p.PauseFor(end.Sub(start))
				p.SetLatency(time.Millisecond) // the burst is on its way together
				var wg sync.WaitGroup
				for _, path := range refused {
					wg.Go(func() {
						if st := get(path); st != http.StatusTooManyRequests {
							t.Errorf("%s: status %d, want the pause's 429", path, st)
						}
						for st := 0; st != http.StatusOK; { // a retry layer that waits what the budget says (resty, go-retryablehttp)
							time.Sleep(b.PauseRemaining())
							st = get(path)
						}
					})
				}
				time.Sleep(2 * time.Millisecond)
				p.SetLatency(0)
				for range 5 { // callers that arrive during the pause
					wg.Go(func() { get("/other") })
				}
				wg.Wait()
				var retry, last time.Time
				into, before := -len(refused), 0 // into the pause after the burst; others admitted before the refused calls' retries
				for _, a := range p.Arrivals() {
					switch {
					case a.Outcome == quotatest.RefusedPause:
						into++
					case strings.HasPrefix(a.Path, "/refused"):
						if retry.IsZero() {
							retry = a.At
						}
						if a.Outcome == quotatest.Admitted {
							last = a.At
						}
					}
				}
				for _, a := range p.Arrivals() {
					if a.Path == "/other" && a.At.Before(last) { // (at one instant, the order is the scheduler's)
						before++
					}
				}
				t.Logf("first retry %v after the pause's end, last %v, %d others before them, %d probes into the pause", retry.Sub(end), last.Sub(end), before, into)
				if lag := retry.Sub(end); lag < 0 || lag > 100*time.Millisecond || before != 0 {
					t.Errorf("first retry %v after the pause's end, the refused calls behind %d others; want them first, within one probe gap (100ms)", lag, before)
				}
				if into != 1 {
					t.Errorf("%d requests into the pause after the burst it refused; want 1, a retry's probe at the reset", into)
				}
			})
		})
	}
}

// A pause that goes on most of a second past its rounded-down reset takes
// some seven probes at 100/s (one per doubling of the overrun); the refused
// call is the probe for the first three at most (its reserved place), later
// ones are whichever call is next, so that no one call's retry layer runs
// out of tries on it (the matrix's clients give up after six).
func TestNoCallSpendsItsTriesOnAPauseThatOverrunsItsReset(t *testing.T) {
	t.Skip("quota: refusals reporting 0 left and a reset (no Retry-After) read as a bucket refilling at >= limit/reset: 16 into a 2.65s pause in 320ms, one call's 10")
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 100, Period: time.Second,
			Headers: quotatest.XRateLimitDelta | quotatest.ResetRoundedDown})
		if err != nil {
			t.Fatal(err)
		}
		b := MustBudget(PerSecond(100), WithBurst(10), WithoutAdaptive())
		get := getter(t, p, b)
		p.PauseFor(2*time.Second + 650*time.Millisecond) // "2" seconds, rounded down
		var wg sync.WaitGroup
		for i := range 10 { // callers that retry at once, as the matrix's transport client does
			wg.Go(func() {
				path := "/call/" + strconv.Itoa(i)
				for st := 0; st != http.StatusOK; {
					st = get(path)
				}
			})
		}
		wg.Wait()
		tries := map[string]int{}
		into := 0
		for _, a := range p.Arrivals() {
			if a.Outcome == quotatest.RefusedPause {
				tries[a.Path]++
				into++
			}
		}
		most := 0
		for _, n := range tries {
			most = max(most, n)
		}
		t.Logf("%d refused by the pause, %d of them one call's", into, most)
		if most > 4 {
			t.Errorf("one call was refused %d times by the pause; want at most 4 (the first, then the probes its reserved place makes it)", most)
		}
	})
}

// Every call of a burst the pause refused keeps its place when each comes
// back at once (go-kit's lb.Retry) after the burst's other refusals were
// heard: the first retry adopts the first place, and the others still
// find theirs behind it — on a windowed server a retry left without a
// place waits for the next window (seen in the feedback matrix, hgkit's
// pause cells, in some interleavings).
func TestRetriesAtOnceAdoptEveryReservedPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second, Headers: quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		b := MustBudget(PerSecond(10), WithBurst(3), WithoutAdaptive())
		get := getter(t, p, b)
		warmUp(t, get)
		p.PauseFor(2 * time.Second)
		p.SetLatency(time.Millisecond) // the burst is on its way together
		refused := []string{"/refused/1", "/refused/2", "/refused/3"}
		var wg sync.WaitGroup
		for i, path := range refused { // a burst the pause refuses
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Microsecond)
				if st := get(path); st != http.StatusTooManyRequests {
					t.Errorf("%s: status %d, want the pause's 429", path, st)
				}
				time.Sleep(500 * time.Microsecond) // once the others' refusals came back
				get(path)
			})
		}
		time.Sleep(500 * time.Microsecond)
		for range 3 { // callers queued behind the burst before the pause is known
			wg.Go(func() { get("/queued") })
		}
		time.Sleep(time.Millisecond)
		p.SetLatency(0)
		end := time.Now().Add(b.PauseRemaining())
		wg.Wait()
		var order []string
		for _, a := range p.Arrivals() {
			if !a.At.Before(end) {
				order = append(order, a.Path)
			}
		}
		t.Logf("after the pause: %v", order)
		first := map[string]bool{}
		for _, path := range order[:min(len(order), len(refused))] {
			first[path] = true
		}
		for _, path := range refused {
			if !first[path] {
				t.Fatalf("sent after the pause in the order %v, want the refused calls first", order)
			}
		}
	})
}

// warmUp sends one request through get and waits a second: its answer
// came (a Transport's first burst is half the configured burst, until the first
// answer), and the configured burst is whole again.
func warmUp(t *testing.T, get func(path string) int) {
	t.Helper()
	if st := get("/warm-up"); st != http.StatusOK {
		t.Fatalf("warm-up: status %d", st)
	}
	time.Sleep(time.Second)
}

// getter returns a GET of a path at the provider p through b's Transport,
// for the place tests: its status, or 0 after reporting the error.
func getter(t *testing.T, p *quotatest.Provider, b *Budget) func(path string) int {
	c := &http.Client{Transport: NewTransport(p.Transport(), b)}
	return func(path string) int {
		resp, err := c.Get("http://api.test" + path)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// A refused call whose retry came back while every slot was taken waits for
// a slot, and the first one freed is its. When another frees before the
// retry runs, its place takes that one (nobody waits for it now); the
// retry, holding a slot of its own, still takes its place — the place's
// slot freed — and goes the moment the pause ends, not once the place is
// given up, behind the callers that queued meanwhile.
func TestRetryThatWaitedForASlotKeepsItsPlace(t *testing.T) {
	// One P: both slots free before the retry given the first one runs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 10, Period: time.Second, Headers: quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		b := MustBudget(PerSecond(10), WithBurst(2), WithoutAdaptive(), WithMaxInFlight(3))
		c := &http.Client{Transport: NewTransport(p.Transport(), b)}
		send := func(path string, want int) *http.Response {
			resp, err := c.Get("http://api.test" + path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != want {
				t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
			}
			return resp
		}
		send("/warm-up", http.StatusOK).Body.Close() // (the first burst is half the burst until the first answer)
		time.Sleep(time.Second)
		held, err := b.Acquire(context.Background()) // a call in flight
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.PauseFor(2 * time.Second)
		p.SetLatency(200 * time.Millisecond) // a and b both on their way when the pause is known
		var refusedA *http.Response
		var wg sync.WaitGroup
		wg.Go(func() { refusedA = send("/refused/a", http.StatusTooManyRequests) }) // its body left open: a slot held
		wg.Go(func() {
			time.Sleep(100 * time.Millisecond) // its turn
			// Its slot goes to a's place, reserved first; its retry finds none free.
			send("/refused/b", http.StatusTooManyRequests).Body.Close()
			send("/refused/b", http.StatusOK).Body.Close()
		})
		other := func() { send("/other", http.StatusOK).Body.Close() }
		wg.Go(func() {
			time.Sleep(150 * time.Millisecond) // a caller waiting for a slot: slots freed go to the places
			other()
		})
		time.Sleep(400 * time.Millisecond)
		synctest.Wait() // b's retry waits for a slot
		p.SetLatency(0)
		if b.InFlight() != 3 {
			t.Fatalf("InFlight = %d, want every slot taken while b's retry waits", b.InFlight())
		}
		refusedA.Body.Close() // its slot is b's retry's
		held.Release()        // a slot for b's place: its retry has one
		wg.Go(func() { send("/refused/a", http.StatusOK).Body.Close() })
		for range 2 { // more callers that arrive during the pause
			wg.Go(func() {
				time.Sleep(time.Millisecond)
				other()
			})
		}
		end := start.Add(400*time.Millisecond + b.PauseRemaining())
		wg.Wait()
		want := end.Sub(start)
		var retries []time.Duration
		first := time.Duration(0)
		for _, a := range p.Arrivals() {
			switch {
			case a.Outcome != quotatest.Admitted, a.Path == "/warm-up":
			case strings.HasPrefix(a.Path, "/refused/"):
				retries = append(retries, a.At.Sub(start))
			case first == 0:
				first = a.At.Sub(start)
			}
		}
		t.Logf("the retries sent at %v, the first other caller at %v", retries, first)
		if len(retries) != 2 || retries[0] != want || retries[1] != want {
			t.Errorf("retries at %v, want both at the pause's end (%v)", retries, want)
		}
		if first <= want {
			t.Errorf("the first other caller sent at %v, want it after the retries, which the burst lets go at the pause's end (%v)", first, want)
		}
		if n := b.InFlight(); n != 0 {
			t.Errorf("InFlight = %d after every call, want 0: a reserved place leaked its slot", n)
		}
	})
}

// A refused call's retry that found its place without a slot and none free
// goes on to wait for one; a slot freed in between goes to that place (a
// caller waits for a slot: freed slots go to the places first), its retry
// not waiting yet. The retry takes its place's slot rather than wait behind
// that caller for another (placeSlotLocked), and goes the moment the pause
// ends — not once its place, its turn come and its retry not there, is
// given up (x first, then). Every other slot is held by a request in
// flight, as under a pause's end's burst. (White-box: the race is between
// placeWithSlot and acquireSlot, which a retry runs one after the other;
// over the matrix's batch, -race with four Ps, once in a few hundred runs.)
func TestRetryFindsTheSlotItsPlaceTookBeforeItWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustBudget(PerSecond(10), WithBurst(2), WithoutAdaptive(), WithMaxInFlight(3))
		ctx := context.Background()
		const z, a, d, x = uint64(1<<63 | 26), uint64(1<<63 | 1), uint64(1<<63 | 4), uint64(1<<63 | 24)
		permit := func(key uint64) Permit {
			p, err := b.acquire(ctx, nil, key)
			if err != nil {
				t.Error(err)
			}
			return p
		}
		var mu sync.Mutex
		sentAt := map[uint64]time.Time{}
		var wg sync.WaitGroup
		sent := func(key uint64, ref slotRef) {
			mu.Lock()
			sentAt[key] = time.Now()
			mu.Unlock()
			b.Observe(http.StatusOK, nil, time.Time{}) // its answer: admitted (the estimate lets the next go)
			time.Sleep(time.Second)                    // its request in flight: its slot held
			b.releaseSlot(ref)
		}
		call := func(key uint64) { // a slot (acquireSlot), then the turn
			wg.Go(func() {
				_, ref, err := b.acquireSlot(ctx, b.now(), never, key)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := b.pacer.turn(ctx, b.now(), never, nil, key); err != nil {
					t.Error(err)
				}
				sent(key, ref)
			})
		}
		pz, pa, pd := permit(z), permit(a), permit(d)
		refuse := func(p Permit, key uint64) {
			b.observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}, nil, p.sent, key)
		}
		refuse(pz, z) // z's place, then a's: both without a slot
		refuse(pa, a)
		end := time.Now().Add(b.PauseRemaining())
		call(x)
		synctest.Wait() // x waits for a slot
		pa.Release()    // a's slot goes to z's place, reserved first
		if _, ok, _ := b.placeWithSlot(ctx, b.now(), never, a); ok {
			t.Fatal("a's retry found its place with a slot: the race is not set up")
		}
		pd.Release() // before a's retry waits for a slot: it goes to a's place
		call(a)
		synctest.Wait()
		pz.Release()
		wg.Go(func() { // z's retry: its place has a slot, and its turn
			p, ok, err := b.placeWithSlot(ctx, b.now(), never, z)
			if !ok || err != nil {
				t.Errorf("z's retry found its place %v, err %v", ok, err)
				return
			}
			sent(z, p.slot)
		})
		wg.Wait()
		t.Logf("sent after the pause's end: z %v, a %v, x %v", sentAt[z].Sub(end), sentAt[a].Sub(end), sentAt[x].Sub(end))
		if !sentAt[z].Equal(end) || !sentAt[a].Equal(end) || !sentAt[x].After(end) {
			t.Errorf("sent after the pause's end: z %v, a %v, x %v; want z and a at it (the burst), x after",
				sentAt[z].Sub(end), sentAt[a].Sub(end), sentAt[x].Sub(end))
		}
	})
}

// A reserved place that nobody comes back for, at the queue's end, gives its
// turn back when it is given up: a call that arrives once the place is
// given up goes at the turn the place had, not one interval after it.
func TestReservedPlaceGivenUpAtTheQueuesEndGivesItsTurnBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := quotatest.New(quotatest.Config{Requests: 1, Period: time.Second, Headers: quotatest.RetryAfterSeconds})
		if err != nil {
			t.Fatal(err)
		}
		b := MustBudget(PerSecond(1), WithoutAdaptive())
		get := getter(t, p, b)
		start := time.Now()
		p.PauseFor(2 * time.Second) // "Retry-After: 2": a known pause
		if st := get("/refused"); st != http.StatusTooManyRequests {
			t.Fatalf("status %d, want the pause's 429", st)
		}
		b.mu.Lock()
		reserved := b.queue.Head != nil && b.queue.Head.place && b.queue.Head.Next == nil
		b.mu.Unlock()
		if !reserved {
			t.Fatal("no place reserved alone in the queue after the refusal: the case is not set up")
		}
		// No retry comes. The place's turn is at 2s, given up at 2s + the
		// grace; the turn after it would come at 3s.
		time.Sleep(2500 * time.Millisecond)
		b.mu.Lock()
		left := b.queue.N
		b.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d waiters queued at 2.5s, want the place given up", left)
		}
		if _, err := b.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2500*time.Millisecond {
			t.Errorf("a call at 2.5s went at %v; want at once: the place given up gave its turn (2s) back", got)
		}
	})
}
