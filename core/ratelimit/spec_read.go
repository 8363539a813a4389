package ratelimit

import (
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/internal/ascii"
	"github.com/headgate-go/headgate/core/internal/httpdate"
	"github.com/headgate-go/headgate/core/internal/num"
)

// addQuotas adds to qs the quotas p's spec and code read, and returns the
// family that decided when the generic headers said nothing (FromNone when
// it added nothing).
func (p *profile) addQuotas(h http.Header, now time.Time, qs *feedbackQuotas) Source {
	before := qs.n
	for i := range p.quotas {
		addSpecQuota(&p.quotas[i], h, now, qs)
	}
	if qs.n > before {
		return FromXRateLimit
	}
	return p.hookQuotas(h, now, qs)
}

// addSpecQuota adds the quota q describes when its remaining count is known.
func addSpecQuota(q *QuotaSpec, h http.Header, now time.Time, qs *feedbackQuotas) {
	out := Quota{Name: q.Name, Unit: q.Unit, Remaining: -1, Limit: -1, Reset: -1, Window: q.Window}
	if q.Limit != "" {
		if limit, ok := feedbackFirstCount(profileHeader(h, q.Limit)); ok {
			out.Limit = limit
		}
	}
	if q.Remaining != "" {
		if remaining, ok := feedbackRemaining(profileHeader(h, q.Remaining)); ok {
			out.Remaining = remaining
		}
	}
	if out.Remaining < 0 && q.Used != "" && out.Limit >= 0 {
		if used, ok := feedbackFirstCount(profileHeader(h, q.Used)); ok {
			out.Remaining = max(out.Limit-used, 0)
		}
	}
	if out.Remaining < 0 && q.UsedOfLimit != "" {
		for _, v := range profileHeader(h, q.UsedOfLimit) {
			if used, limit, ok := parseUsedOfLimit(ascii.TrimOWS(v)); ok {
				out.Remaining, out.Limit = max(limit-used, 0), limit
				break
			}
		}
	}
	if out.Remaining < 0 {
		return
	}
	if q.WindowHeader != "" {
		for _, v := range profileHeader(h, q.WindowHeader) {
			if d, ok := readWait(v, q.WindowEncoding, now); ok {
				out.Window = d
				break
			}
		}
	}
	if q.Reset != "" {
		for _, v := range profileHeader(h, q.Reset) {
			if d, ok := readEncoded(v, q.ResetEncoding, now); ok {
				out.Reset = d
				break
			}
		}
	}
	if out.Reset < 0 && q.Rolling && out.Window > 0 {
		out.Reset = out.Window
	}
	qs.add(out, true)
}

// refine adjusts fb, once the quotas decided, as p reads the status, the
// header and the body prefix (nil when none was read): the refusal
// statuses, the signals, then p's code. fb.Pause stays >= 0.
func (p *profile) refine(status int, h http.Header, body []byte, now time.Time, fb *Feedback) {
	if containsInt(p.spec.RefusalStatuses, status) {
		fb.Exhausted = true
	}
	for i := range p.spec.Signals {
		if g := &p.spec.Signals[i]; containsInt(g.Statuses, status) {
			applySignal(g, body, now, fb)
		}
	}
	p.hookRefine(status, h, body, now, fb)
}

// applySignal applies g to fb as Signal documents.
func applySignal(g *Signal, body []byte, now time.Time, fb *Feedback) {
	if len(body) == 0 {
		return
	}
	matched := false
	for _, c := range g.Contains {
		if ascii.ContainsFold(string(body), c) {
			matched = true
			break
		}
	}
	if !matched && g.Field != "" {
		if v, ok := jsonValue(body, g.Field); ok {
			matched = len(g.Values) == 0
			for _, want := range g.Values {
				matched = matched || v == want
			}
		}
	}
	wait, waitOK := time.Duration(0), false
	if g.Wait != "" {
		if v, ok := jsonValue(body, g.Wait); ok {
			wait, waitOK = readWait(v, g.WaitEncoding, now)
		}
	}
	if !matched && !(waitOK && len(g.Contains) == 0 && g.Field == "") {
		return
	}
	fb.Exhausted = true
	switch {
	case waitOK && fb.Source != FromRetryAfter:
		fb.Pause = max(fb.Pause, wait)
	case fb.Pause == 0 && g.UntilReset && fb.Reset > 0:
		fb.Pause = fb.Reset
	case fb.Pause == 0:
		fb.Pause = g.DefaultWait
	}
	fb.Pause = max(fb.Pause, g.MinWait)
}

// readEncoded reads a reset value stated as e says, as seen at now. A time
// in the past gives 0.
func readEncoded(v string, e Encoding, now time.Time) (time.Duration, bool) {
	v = ascii.TrimOWS(v)
	switch e {
	case EncodingSeconds:
		return num.ParseDuration(v, time.Second)
	case EncodingMilliseconds:
		return num.ParseDuration(v, time.Millisecond)
	case EncodingDuration:
		return num.ParseGoDuration(v)
	case EncodingUnix, EncodingUnixMilli:
		d, ok := num.ParseDecimal(v)
		if !ok {
			return 0, false
		}
		if e == EncodingUnix {
			return feedbackUntilUnix(d.Int, d.Frac, now), true
		}
		return feedbackUntilUnix(d.Int/1000, d.Int%1000*1e6+d.Frac/1000, now), true
	case EncodingDate:
		if t, ok := httpdate.ParseRFC3339(v); ok {
			return max(t.Sub(now), 0), true
		}
		if t, ok := httpdate.Parse(v, now); ok {
			return max(t.Sub(now), 0), true
		}
		return 0, false
	}
	return parseFeedbackReset(v, now)
}

// readWait reads a wait or a window length stated as e says: by default
// seconds or a Go duration.
func readWait(v string, e Encoding, now time.Time) (time.Duration, bool) {
	if e == EncodingAuto {
		return parseResetAfter(v)
	}
	return readEncoded(v, e, now)
}

// bodyPrefix returns how much of the body p reads for a response with this
// status and header: p's body size on a status its signals or code name (on
// a 2xx only when the body is JSON), else 0.
func (p *profile) bodyPrefix(status int, h http.Header) int {
	if !containsInt(p.statuses, status) || status >= 200 && status < 300 && !profileIsJSON(h) {
		return 0
	}
	return p.bodyMax
}
