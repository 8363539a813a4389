package resty_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/require"

	"github.com/headgate-go/headgate/core"
	"github.com/headgate-go/headgate/core/quotatest"
)

// quietLogger drops resty's log lines (it warns on every failed attempt).
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

// newResty returns a bare resty client sending through rt, with its log
// muted and no Use yet.
func newResty(rt http.RoundTripper) *resty.Client {
	return resty.New().SetTransport(rt).SetLogger(quietLogger{})
}

// leakWatch counts the LeakedBody events of a budget: a body the garbage
// collector had to free is a leak even if InFlight reads 0 afterwards.
type leakWatch struct{ leaked atomic.Int64 }

func (w *leakWatch) observer() core.Option {
	return core.WithObserver(func(e core.Event) {
		if e.Reason == core.LeakedBody {
			w.leaked.Add(1)
		}
	})
}

// assertNoSlots fails the test if the budget still holds a slot, or if a
// slot was only freed by the garbage collector.
func (w *leakWatch) assertNoSlots(t *testing.T, b *core.Budget) {
	t.Helper()
	require.Zero(t, b.InFlight(), "InFlight after the call: a slot leaked")
	require.Zero(t, w.leaked.Load(), "LeakedBody events: a body was never closed")
}

// attemptLog records when resty starts each attempt (OnBeforeRequest),
// per URL path: the end of resty's own wait, before the transport's.
type attemptLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (l *attemptLog) install(c *resty.Client) {
	l.at = map[string][]time.Time{}
	c.OnBeforeRequest(func(_ *resty.Client, r *resty.Request) error {
		path := r.URL
		if i := strings.Index(path, "://"); i >= 0 {
			path = path[i+3:]
			path = path[strings.IndexByte(path, '/'):]
		}
		l.mu.Lock()
		l.at[path] = append(l.at[path], time.Now())
		l.mu.Unlock()
		return nil
	})
}

func (l *attemptLog) times(path string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at[path]...)
}

// arrivalsAt returns the provider's arrivals for path.
func arrivalsAt(p *quotatest.Provider, path string) []quotatest.Arrival {
	var out []quotatest.Arrival
	for _, a := range p.Arrivals() {
		if a.Path == path {
			out = append(out, a)
		}
	}
	return out
}

// routeTransport sends requests whose path starts with a prefix to that
// prefix's transport, and the rest to def: two providers behind one client.
type routeTransport struct {
	prefix string
	to     http.RoundTripper
	def    http.RoundTripper
}

func (rt routeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, rt.prefix) {
		return rt.to.RoundTrip(r)
	}
	return rt.def.RoundTrip(r)
}
