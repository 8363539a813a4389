package ratelimit

import (
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/num"
)

// familyMaxHeaders bounds the family headers one response is read for, and
// familyMaxGroups the quotas they make; past them, the names that sort last
// are dropped, so the result never depends on the header map's order.
const (
	familyMaxHeaders = 32
	familyMaxGroups  = 16
	familyMaxWindows = 8 // members of one comma-separated multi-window value
)

// familyHeaders holds a response's family headers, sorted by lower-case name.
type familyHeaders struct {
	keys [familyMaxHeaders]string
	vals [familyMaxHeaders][]string
	n    int
}

// add inserts header k in name order. Of two keys that differ only in case
// (a map built by hand), the canonical one wins, else the one that sorts
// first, as for the exact names.
func (fh *familyHeaders) add(k string, vs []string) {
	i := 0
	for i < fh.n && compareFold(fh.keys[i], k) < 0 {
		i++
	}
	if i < fh.n && compareFold(fh.keys[i], k) == 0 {
		if old := fh.keys[i]; isCanonicalKey(old) || !isCanonicalKey(k) && old < k {
			return
		}
		fh.keys[i], fh.vals[i] = k, vs
		return
	}
	if i == len(fh.keys) {
		return
	}
	last := min(fh.n, len(fh.keys)-1)
	copy(fh.keys[i+1:last+1], fh.keys[i:last])
	copy(fh.vals[i+1:last+1], fh.vals[i:last])
	fh.keys[i], fh.vals[i] = k, vs
	fh.n = min(fh.n+1, len(fh.keys))
}

// compareFold compares a and b as their ASCII lower-case forms.
func compareFold(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if ca, cb := ascii.Lower(a[i]), ascii.Lower(b[i]); ca != cb {
			return int(ca) - int(cb)
		}
	}
	return len(a) - len(b)
}

// isCanonicalKey reports whether k is in net/http's canonical form: each
// word's first letter upper case, the rest lower case.
func isCanonicalKey(k string) bool {
	upper := true
	for i := range len(k) {
		c := k[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return false
		}
		upper = c == '-'
	}
	return true
}

// familyGroup gathers the headers of one quota: one family, dimension and
// window.
type familyGroup struct {
	name familyName
	vals [famWindowMs + 1][]string // by field
}

// familyGroups reads every family header's name and gathers them by quota,
// in name order.
func familyGroups(fh *familyHeaders, gs *[familyMaxGroups]familyGroup) int {
	n := 0
	for i := range fh.n {
		name, ok := parseFamilyName(fh.keys[i])
		if !ok {
			continue
		}
		g := 0
		for g < n && !gs[g].name.sameQuota(&name) {
			g++
		}
		if g == n {
			if n == len(gs) {
				continue
			}
			gs[n] = familyGroup{name: name}
			n++
		}
		if gs[g].vals[name.field] == nil {
			gs[g].vals[name.field] = fh.vals[i]
		}
	}
	return n
}

// sameQuota reports whether two names are headers of one quota.
func (a *familyName) sameQuota(b *familyName) bool {
	return a.family == b.family && a.dim == b.dim && a.windowed == b.windowed && a.window == b.window
}

// base reports whether g has neither dimension nor window: its family's
// own quota, whose reset and window its dimensions borrow.
func (g *familyGroup) base() bool { return g.name.dim == "" && !g.name.windowed }

// parseFamilyFeedback adds to qs a quota for every family group but the
// bases of the X-RateLimit-* and X-Rate-Limit-* spellings, which
// parseXRateLimitFamily reads with the exact names.
func parseFamilyFeedback(gs []familyGroup, now time.Time, qs *feedbackQuotas) {
	for i := range gs {
		g := &gs[i]
		if g.base() && (g.name.family == "x-ratelimit-" || g.name.family == "x-rate-limit-") {
			continue
		}
		var r quotaReading
		r.name, r.unit = familyQuotaName(g.name.dim)
		r.limit, r.remaining, r.used = g.vals[famLimit], g.vals[famRemaining], g.vals[famUsed]
		r.setResets(g)
		r.window = max(g.name.window, 0)
		if !g.name.windowed {
			r.window = g.window()
		}
		// A concurrency slot returns when a request ends, not at a time:
		// it borrows no reset.
		if r.unit != "concurrent-requests" && !g.base() {
			if b := familyBase(gs, g.name.family); b != nil {
				if r.resets[0].vals == nil && r.resets[1].vals == nil && r.resets[2].vals == nil {
					r.setResets(b)
				}
				if r.window == 0 && !g.name.windowed {
					r.window = b.window()
				}
			}
		}
		addReadQuotas(qs, &r, now)
	}
}

// familyBase returns the base group of family, or nil.
func familyBase(gs []familyGroup, family string) *familyGroup {
	for i := range gs {
		if gs[i].base() && gs[i].name.family == family {
			return &gs[i]
		}
	}
	return nil
}

// window returns the window length g's window header states (seconds, or
// milliseconds for a -ms field); 0 when none is valid.
func (g *familyGroup) window() time.Duration {
	if g == nil {
		return 0
	}
	if d, ok := feedbackFirstResetAfter(g.vals[famWindow]); ok {
		return d
	}
	for _, v := range g.vals[famWindowMs] {
		if d, ok := num.ParseDuration(ascii.TrimOWS(v), time.Millisecond); ok {
			return d
		}
	}
	return 0
}

// resetSource is one header a quota's reset may come from, and how its
// value reads.
type resetSource struct {
	vals []string
	kind familyField // famReset, famResetAfter or famResetMs
}

// quotaReading is what the headers of one quota said, before it is added:
// the values of its limit, remaining and used headers, and its reset
// headers in order of preference (the first valid one gives the reset).
type quotaReading struct {
	name, unit             string
	limit, remaining, used []string
	resets                 [3]resetSource
	window                 time.Duration
}

// setResets takes g's reset headers: a delta (reset-after, reset-ms)
// before a reset of any form, because a delta does not depend on two
// clocks agreeing.
func (r *quotaReading) setResets(g *familyGroup) {
	r.resets = [3]resetSource{
		{g.vals[famResetAfter], famResetAfter},
		{g.vals[famResetMs], famResetMs},
		{g.vals[famReset], famReset},
	}
}

// readReset reads one reset value of the given kind.
func readReset(v string, kind familyField, now time.Time) (time.Duration, bool) {
	switch kind {
	case famResetAfter:
		return parseResetAfter(v)
	case famResetMs:
		return num.ParseDuration(ascii.TrimOWS(v), time.Millisecond)
	}
	return parseFeedbackReset(v, now)
}

// firstReset returns the first valid reset among r's sources.
func (r *quotaReading) firstReset(now time.Time) (time.Duration, bool) {
	for _, s := range r.resets {
		for _, v := range s.vals {
			if d, ok := readReset(v, s.kind, now); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// addReadQuotas adds the quotas r describes to qs and reports whether it
// added any. A limit listing several windows ("600,30000") with as many
// remaining counts, or else as many used counts, is one quota per window,
// paired by position, each reset paired likewise when the reset lists as
// many (else unknown). Otherwise r is one quota: the first limit, the
// smallest remaining count (a header sent twice, or folded, reads as the
// smaller), else the limit less the first used count. No quota is added
// without a remaining count.
func addReadQuotas(qs *feedbackQuotas, r *quotaReading, now time.Time) bool {
	var lims, rems, useds [familyMaxWindows]int
	if nl := countMembers(r.limit, &lims); nl > 1 {
		nr, nu := countMembers(r.remaining, &rems), countMembers(r.used, &useds)
		if nr == nl || nr <= 0 && nu == nl {
			var resets [familyMaxWindows]time.Duration
			nres := r.resetMembers(&resets, now)
			for i := range nl {
				q := Quota{Name: r.name, Unit: r.unit, Limit: lims[i], Reset: -1, Window: r.window}
				if nr == nl {
					q.Remaining = rems[i]
				} else {
					q.Remaining = max(lims[i]-useds[i], 0)
				}
				if nres == nl {
					q.Reset = resets[i]
				}
				qs.add(q, true)
			}
			return true
		}
	}
	q := Quota{Name: r.name, Unit: r.unit, Remaining: -1, Limit: -1, Reset: -1, Window: r.window}
	if limit, ok := feedbackFirstCount(r.limit); ok {
		q.Limit = limit
	}
	if remaining, ok := feedbackRemaining(r.remaining); ok {
		q.Remaining = remaining
	} else if q.Limit >= 0 {
		if used, ok := feedbackFirstCount(r.used); ok {
			q.Remaining = max(q.Limit-used, 0)
		}
	}
	if q.Remaining < 0 {
		return false
	}
	if d, ok := r.firstReset(now); ok {
		q.Reset = d
	}
	qs.add(q, true)
	return true
}

// countMembers reads every member of every line of vals as a count into
// out and returns how many there were: 0 for none, -1 when one is not a
// valid count or there are more than out holds.
func countMembers(vals []string, out *[familyMaxWindows]int) int {
	n := 0
	for _, line := range vals {
		for line != "" {
			var m string
			m, line = feedbackNextListMember(line)
			c, ok := num.ParseCount(m)
			if !ok || n == len(out) {
				return -1
			}
			out[n] = c
			n++
		}
	}
	return n
}

// resetMembers reads the members of r's first reset source that has any
// into out and returns how many were valid: -1 when one was not.
func (r *quotaReading) resetMembers(out *[familyMaxWindows]time.Duration, now time.Time) int {
	for _, s := range r.resets {
		if len(s.vals) == 0 {
			continue
		}
		n := 0
		for _, line := range s.vals {
			for line != "" {
				var m string
				m, line = feedbackNextListMember(line)
				d, ok := readReset(m, s.kind, now)
				if !ok || n == len(out) {
					return -1
				}
				out[n] = d
				n++
			}
		}
		return n
	}
	return 0
}
