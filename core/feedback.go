package core

import (
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// DefaultMaxPause is the longest pause a budget applies: one hour.
//
// An hour covers the longest window the common quotas are counted in (an hourly
// quota such as GitHub's 5,000 requests per hour), so a server that says "come
// back when the window turns" is obeyed in full. A longer value, or a garbage
// one (a Unix time mistaken for a number of seconds, a date decades ahead), is
// cut to it, so no header can stall a budget for days. A budget built with
// WithMaxPause uses its own cap instead. ratelimit.Parse itself reports pauses
// uncapped.
const DefaultMaxPause = time.Hour

// WithProfile makes the budget read responses with profile p as well as
// generically: Observe, Permit.Observe and the Transport use it, and the
// Transport reads the body prefix the profile asks for. p is a built-in
// profile (ratelimit.GitHub…) or one a user described
// (ratelimit.NewProfile, ratelimit.LoadProfile). The default is
// ratelimit.NoProfile.
func WithProfile(p ratelimit.Profile) Option {
	return optionFunc(func(c *config) { c.profile = p })
}

// parseFeedback is ratelimit.Parse with the pause capped at maxPause; a
// maxPause <= 0 means DefaultMaxPause. The budget calls it with its
// WithMaxPause value.
func parseFeedback(status int, h http.Header, now time.Time, maxPause time.Duration) ratelimit.Feedback {
	return readFeedback(status, h, nil, now, maxPause, ratelimit.NoProfile)
}

// readFeedback reads a response as profile pr does (body is the prefix of
// the body pr asked for, or nil) and caps the pause at maxPause (<= 0 means
// DefaultMaxPause).
func readFeedback(status int, h http.Header, body []byte, now time.Time, maxPause time.Duration, pr ratelimit.Profile) ratelimit.Feedback {
	if maxPause <= 0 {
		maxPause = DefaultMaxPause
	}
	fb := pr.Parse(status, h, body, now)
	fb.Pause = min(fb.Pause, maxPause)
	return fb
}
