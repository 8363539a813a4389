package gokit

import (
	"fmt"
	"net/http"
	"time"

	"github.com/headgate-go/headgate/core/ratelimit"
)

// A ResponseError is a response the server refused, turned into an error by
// the user's go-kit DecodeResponseFunc (see CheckResponse). go-kit treats
// every response as a success unless the decoder returns an error, so this
// is how a 429 reaches go-kit's lb.Retry, which then tries again; each try
// waits for the budget's pause, so the retry goes when the pause ends.
//
// Under NewDelayingLimiter or NewErroringLimiter, a ResponseError the
// endpoint returns is also fed to the call's permit when no response reached
// the budget another way (ClientFeedback), so the server's pause and the
// adaptive slow-down apply to every caller of the budget. Under SetClient
// the budget's transport has already read the response.
type ResponseError struct {
	StatusCode int         // the response's status, e.g. 429
	Header     http.Header // the response's headers, where the budget reads Retry-After
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("headgate: server refused the call: %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// CheckResponse returns a *ResponseError for a response that refuses the
// call for its rate: a 429 Too Many Requests, a 503 Service Unavailable, or
// a 403 Forbidden whose headers say the quota is spent (GitHub refuses
// over-limit calls with a 403 and Retry-After or X-RateLimit-Remaining: 0;
// ratelimit.Parse decides). It returns nil for any other response.
// Call it first in a DecodeResponseFunc:
//
//	func decode(ctx context.Context, resp *http.Response) (interface{}, error) {
//		if err := hgkit.CheckResponse(resp); err != nil {
//			return nil, err
//		}
//		...
//	}
//
// It does not read or close the body. For a provider that refuses with yet
// another status, return a &ResponseError{...} of your own.
func CheckResponse(resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
	case http.StatusForbidden:
		if !ratelimit.Parse(resp.StatusCode, resp.Header, time.Now()).Exhausted {
			return nil
		}
	default:
		return nil
	}
	return &ResponseError{StatusCode: resp.StatusCode, Header: resp.Header}
}
