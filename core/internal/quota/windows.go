package quota

// windows is the windows hypothesis: where the current window turns, and
// how long a window lasts.
//
// A report of a window states its reset: an instant X at the stated
// resolution (a whole second, or finer), rounded up, down or to the
// nearest by the server, and on the server's clock when it is an epoch.
// So a stated X places the turn within res of it either way, and a report
// of the same window that saw no turn yet places it after that report's
// decision. Intersected over the window's reports, these bound the turn
// [lo, hi]; the most likely instant is the earliest X stated (a reset
// rounded up states the turn or a little after; down or exact, the turn
// itself). A request that finds the window turned (the quota back) bounds
// the turn from above; the turns seen give the window's length.
type windows struct {
	lo, hi  int64 // the current window turns within [lo, hi]; hi 0: not known
	stated  int64 // the earliest reset instant its reports stated; 0: none
	refused int64 // a guess for its turn was refused at this instant; 0: none
	length  int64 // a window's length; 0: not known

	turnLo, turnHi int64 // the last turn seen, bracketed; 0: none
	since          int64 // reports of requests sent before this are of an earlier window
}

// resolution is the resolution of a stated reset: a whole second when the
// reset or its instant is one, finer otherwise.
func resolution(reset, instant int64) int64 {
	if reset%Second == 0 || instant%Second == 0 {
		return Second
	}
	return Second / 1000
}

// notYet records a report s that found the window not turned, stating
// its reset within x (zero: none) at resolution res.
func (w *windows) notYet(s sample, x [2]int64, res int64) {
	if s.sent < w.since {
		return // of an earlier window
	}
	w.lo = max(w.lo, s.at)
	if x[0] == 0 {
		return
	}
	if x[1]+res < w.lo {
		return // a turn already passed: a report of the window before
	}
	if w.hi == 0 {
		w.hi, w.stated = x[1]+res, x[0]
		return
	}
	w.hi = min(w.hi, x[1]+res)
	if w.stated == 0 || x[0] < w.stated {
		w.stated = x[0]
	}
	if w.hi < w.lo {
		w.hi = w.lo + res
	}
}

// turned records a turn seen between a report decided at before and s;
// s states x (zero: none) at res.
func (w *windows) turned(before int64, s sample, x [2]int64, res int64) {
	if w.turnHi != 0 && before < w.turnHi {
		w.notYet(s, x, res) // the turn already seen, shown again
		return
	}
	// The turn came before s was decided, at the latest when its answer
	// left: s.recv less the shortest way back (s.at - s.sent), later than
	// s.at by what the wire's spread delayed s.
	after := max(s.at, s.recv-(s.at-s.sent))
	if w.turnLo != 0 {
		// Turns come a window or more apart: the span between this turn's
		// latest and the last one's earliest bounds a window's length.
		if d := after - w.turnLo; d > 0 && (w.length == 0 || d < w.length) {
			w.length = d
		}
	}
	if x[0] != 0 && res < Second {
		// A window stated to end at the latest that far after its turn at
		// the earliest lasts at most so long: the latest next turn counts
		// on the least such bound (bracket).
		if d := x[1] + res - before; d > 0 && (w.length == 0 || d < w.length) {
			w.length = d
		}
	}
	w.turnLo, w.turnHi, w.since = before, after, s.sent
	w.lo, w.hi, w.stated, w.refused = after, 0, 0, 0
	if x[0] != 0 {
		w.notYet(s, x, res)
	} else if w.length > 0 {
		w.lo, w.hi = before+w.length, after+w.length
	}
}

// guessRefused records a request sent on a guess for the turn, refused:
// the turn is after its decision.
func (w *windows) guessRefused(at int64) {
	w.lo = max(w.lo, at)
	w.refused = at
	if w.hi != 0 && w.hi < w.lo {
		w.hi = 0
	}
}

// bracket returns where the current window turns: the latest instant it
// may (pessimistic) and the instant a guess goes (optimistic); ok false
// when nothing places it. Once a guess was refused, the next one goes
// halfway to the latest. stated is a window's stated length (0: none);
// most, the longest the quota's return allows (0: no bound).
func (w *windows) bracket(stated, most int64) (latest, guess int64, ok bool) {
	hi := w.hi
	if most > 0 && w.lo != 0 && (hi == 0 || w.lo+most < hi) {
		hi = w.lo + most // (the window holding lo ends within most of it)
	}
	minLength := stated
	if minLength == 0 && most > 0 && (w.length == 0 || most < w.length) {
		minLength = most
	}
	if l := max(w.length, minLength); w.turnHi != 0 && l > 0 {
		// The turn after the last one seen comes a window later, from the
		// first request it counted at the latest.
		next := w.turnHi + l
		if next < w.lo {
			next += (w.lo - next + l - 1) / l * l
		}
		if hi == 0 || next < hi {
			hi = next
		}
	}
	if hi == 0 {
		if w.lo != 0 {
			// Nothing places the turn: guesses find it, each later than
			// the one before (Model.backoff).
			return Never, w.lo, true
		}
		return 0, 0, false
	}
	guess = max(w.lo, w.stated)
	if w.refused != 0 {
		guess = max(w.lo, (w.lo+hi)/2)
	}
	return hi, min(guess, hi), true
}
