package core

import (
	"context"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// RetryWait returns how long a retry layer should wait before sending again
// the call that got resp: when a Transport on b reads b's responses (it has
// read resp), what is left of the wait the server stated (PauseRemaining):
// the retry then waits in the budget for what its estimate holds it for (a
// Retry-After of a whole second may be rounded up from a few ms); else what
// resp itself asks for, read by ratelimit.Parse (Retry-After in every RFC
// 9110 form, retry-after-ms, the rate-limit fields) and capped at
// b.MaxPause(). It returns 0 when neither asks for a wait: the retry
// layer's own backoff applies. resp may be nil (the attempt failed before
// a response).
//
// When that wait would end at or after ctx's deadline, the retry could never
// be sent in time: RetryWait returns 0 and core's *RateLimitError (b.Check's,
// or, when only resp asked for the wait, one built from resp), so the retry
// layer fails at once instead of sleeping into the deadline. A done ctx
// returns its own error. RetryWait takes no slot and no turn. The resty and
// retryablehttp adapters wait for what it returns.
func (b *Budget) RetryWait(ctx context.Context, resp *http.Response) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// now is read before the pause, so now+pause never overestimates when
	// the pause ends: when it reaches the deadline, so does b.Check.
	now := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	if pause := b.PauseRemaining(); pause > 0 {
		if !hasDeadline || now.Add(pause).Before(deadline) {
			return pause, nil
		}
		if err := b.Check(ctx); err != nil {
			return 0, err
		}
		return b.PauseRemaining(), nil // the pause ended between the readings
	}
	if resp == nil || b.readsResponses() {
		return 0, nil
	}
	wait := min(ratelimit.Parse(resp.StatusCode, resp.Header, now).Pause, b.MaxPause())
	if wait <= 0 {
		return 0, nil
	}
	if hasDeadline && !now.Add(wait).Before(deadline) {
		return 0, &RateLimitError{RetryAfter: wait, StatusCode: resp.StatusCode, Reason: Paused, Budget: b.Name(), Deadline: deadline}
	}
	return wait, nil
}
