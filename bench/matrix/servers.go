package matrix

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// Server is one running server of a cell.
type Server struct {
	URL  string            // the base URL; a call's path is URL + "/v1/items/<call>"
	Base http.RoundTripper // what clients send through: a loopback pool, or in-process
	// Arrivals returns every request the server saw, in arrival order, and
	// when its pause began (zero if it did not).
	Arrivals func() ([]Arrival, time.Time)
	Close    func()
	// Sliding is where the windows of a sliding-window counter turn, for
	// the cell's floor (floor.go); nil for any other server.
	Sliding *slidingWindows
}

// ServerSpec names a server and starts fresh instances of it.
type ServerSpec struct {
	Name string
	// Burst is what the server admits back to back from idle in w: a GCRA
	// server's burst, a window server's Rate.
	Burst func(w Workload) int
	// InProcess is set for the servers that can serve without a network
	// (quotatest), so that their cells run inside testing/synctest too.
	InProcess bool
	start     func(env serverEnv) (*Server, error)
}

// serverEnv is what a server is started with.
type serverEnv struct {
	w         Workload
	pause     bool // pause once w.pauseAfter() requests were admitted
	inProcess bool // serve through an in-process transport, not loopback
	redisAddr string
	key       string // unique per instance, for servers that share a store
}

func gcraBurst(w Workload) int   { return w.Burst }
func windowBurst(w Workload) int { return w.Rate }

// callPath is the path of call id.
func callPath(id int) string { return "/v1/items/" + strconv.Itoa(id) }

// callOf is the call a path belongs to, -1 if it names none.
func callOf(path string) int {
	id, err := strconv.Atoi(path[strings.LastIndexByte(path, '/')+1:])
	if err != nil {
		return -1
	}
	return id
}

// okBody is what every server answers an admitted call with.
var okBody = []byte("{\"ok\":true}\n")

// quotatestServer is a quotatest provider of alg in style. Its pause is
// the provider's own (PauseFor), started by its handler at the admission
// that makes a third of the batch; after it the provider's quota is whole.
func quotatestServer(name string, alg quotatest.Algorithm, style quotatest.HeaderStyle) ServerSpec {
	burst := windowBurst
	if alg == quotatest.GCRA {
		burst = gcraBurst
	}
	return ServerSpec{Name: name, Burst: burst, InProcess: true, start: func(e serverEnv) (*Server, error) {
		var (
			p        *quotatest.Provider
			mu       sync.Mutex
			admitted int
			pauseAt  time.Time
		)
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			admitted++
			if e.pause && admitted == e.w.pauseAfter() {
				pauseAt = time.Now()
				p.PauseFor(e.w.Pause)
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(okBody)
		})
		cfg := quotatest.Config{Requests: e.w.Rate, Period: time.Second, Algorithm: alg, Headers: style, Handler: handler}
		if alg == quotatest.GCRA {
			cfg.Burst = e.w.Burst
		}
		var sliding *slidingWindows
		if alg == quotatest.SlidingWindow { // its windows are aligned as Truncate aligns them
			sliding = &slidingWindows{origin: time.Now().Truncate(cfg.Period), length: cfg.Period}
		}
		arrivals := func() ([]Arrival, time.Time) {
			out := providerArrivals(p)
			mu.Lock()
			defer mu.Unlock()
			return out, pauseAt
		}
		if e.inProcess {
			var err error
			if p, err = quotatest.New(cfg); err != nil {
				return nil, err
			}
			return &Server{URL: "http://quotatest.invalid", Base: p.Transport(), Arrivals: arrivals, Close: func() {}, Sliding: sliding}, nil
		}
		s, err := quotatest.NewServer(cfg)
		if err != nil {
			return nil, err
		}
		p = s.Provider
		pool := loopbackPool(e.w)
		return &Server{URL: s.URL, Base: pool, Arrivals: arrivals, Close: func() {
			pool.CloseIdleConnections()
			s.Close()
		}, Sliding: sliding}, nil
	}}
}

// loopbackPool is the connection pool every client of a loopback cell
// sends through, big enough for the workers.
func loopbackPool(w Workload) *http.Transport {
	pool := http.DefaultTransport.(*http.Transport).Clone()
	pool.MaxIdleConnsPerHost = w.Workers
	return pool
}

// recorder is the front of a real limiter library's server: it records
// every arrival and plays the pause (answering 429 with Retry-After, the
// time left rounded up, as a paused server does), which the libraries
// cannot. admit is called by the handler behind the limiter.
type recorder struct {
	w     Workload
	pause bool

	mu       sync.Mutex
	arrivals []Arrival // guarded by mu
	admitted int       // guarded by mu
	pauseAt  time.Time // guarded by mu
}

// arrive records an arrival and returns its index and, when the server is
// paused, the time left in the pause.
func (r *recorder) arrive(path string) (int, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	a := Arrival{At: now, Call: callOf(path)}
	var left time.Duration
	if !r.pauseAt.IsZero() {
		if left = r.pauseAt.Add(r.w.Pause).Sub(now); left > 0 {
			a.Paused, a.Status = true, http.StatusTooManyRequests
		}
	}
	r.arrivals = append(r.arrivals, a)
	return len(r.arrivals) - 1, max(0, left)
}

// done records the status arrival i was answered with.
func (r *recorder) done(i, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals[i].Status = status
}

// admit counts one admission and starts the pause at the third of the batch.
func (r *recorder) admit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.admitted++
	if r.pause && r.admitted == r.w.pauseAfter() {
		r.pauseAt = time.Now()
	}
}

func (r *recorder) snapshot() ([]Arrival, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Arrival(nil), r.arrivals...), r.pauseAt
}

// retryAfter is the Retry-After of a pause with left to run.
func retryAfter(left time.Duration) string {
	return strconv.FormatInt(int64((left+time.Second-1)/time.Second), 10)
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// netHTTPServer serves limit(ok) over loopback behind a recorder; or
// in-process, each request served by a direct call, when the limiter
// needs no network (httprate's in-memory counter: its tests run it in
// virtual time).
func netHTTPServer(e serverEnv, limit func(http.Handler) http.Handler, closeExtra func()) (*Server, error) {
	rec := &recorder{w: e.w, pause: e.pause}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rec.admit()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(okBody)
	})
	limited := limit(ok)
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, left := rec.arrive(r.URL.Path)
		if left > 0 {
			w.Header().Set("Retry-After", retryAfter(left))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		limited.ServeHTTP(sw, r)
		rec.done(i, sw.status)
	})
	if e.inProcess {
		return &Server{URL: "http://in-process.invalid", Base: handlerTransport{front}, Arrivals: rec.snapshot, Close: func() {
			if closeExtra != nil {
				closeExtra()
			}
		}}, nil
	}
	ts := httptest.NewServer(front)
	pool := loopbackPool(e.w)
	return &Server{URL: ts.URL, Base: pool, Arrivals: rec.snapshot, Close: func() {
		pool.CloseIdleConnections()
		ts.Close()
		if closeExtra != nil {
			closeExtra()
		}
	}}, nil
}

// handlerTransport serves each request by calling h, in the caller's
// goroutine.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// Servers are the matrix's servers, in table order.
var Servers = []ServerSpec{
	quotatestServer("quotatest GCRA · X-RateLimit delta (rounded up) + Retry-After", quotatest.GCRA,
		quotatest.XRateLimitDelta|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest GCRA · GitHub-style epoch reset (rounded down) + Retry-After", quotatest.GCRA,
		quotatest.XRateLimitEpoch|quotatest.ResetRoundedDown|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest GCRA · IETF RateLimit + Retry-After", quotatest.GCRA,
		quotatest.IETF|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest GCRA · X-RateLimit delta · no Retry-After", quotatest.GCRA,
		quotatest.XRateLimitDelta),
	quotatestServer("quotatest fixed · GitHub-style epoch reset (rounded down) · no Retry-After", quotatest.FixedWindow,
		quotatest.XRateLimitEpoch|quotatest.ResetRoundedDown),
	quotatestServer("quotatest fixed · X-RateLimit delta + Retry-After", quotatest.FixedWindow,
		quotatest.XRateLimitDelta|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest fixed · IETF RateLimit + Retry-After", quotatest.FixedWindow,
		quotatest.IETF|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest sliding · epoch reset (rounded down) + Retry-After", quotatest.SlidingWindow,
		quotatest.XRateLimitEpoch|quotatest.ResetRoundedDown|quotatest.RetryAfterSeconds),
	quotatestServer("quotatest sliding · IETF RateLimit + Retry-After", quotatest.SlidingWindow,
		quotatest.IETF|quotatest.RetryAfterSeconds),
	httprateServer,
	redisRateServer,
	fiberServer("fiber limiter · fixed window", false),
	fiberServer("fiber limiter · sliding window", true),
}

// ServerByName returns the server called name, or whose name starts with it.
func ServerByName(name string) (ServerSpec, bool) {
	for _, s := range Servers {
		if s.Name == name || name != "" && strings.HasPrefix(s.Name, name) {
			return s, true
		}
	}
	return ServerSpec{}, false
}

// Aged is s with its batch started age after the server (its limiter
// built): a limiter that has run a while, as every production one has.
// httprate starts its windows when it is built, so its windows then turn
// mid-batch; quotatest's are on the Unix second whatever its age.
func Aged(s ServerSpec, age time.Duration) ServerSpec {
	if age <= 0 {
		return s
	}
	start := s.start
	s.start = func(e serverEnv) (*Server, error) {
		srv, err := start(e)
		time.Sleep(age)
		return srv, err
	}
	return s
}

// errNoRedis is the error of a redis_rate cell started without redis.
var errNoRedis = errors.New("matrix: redis_rate needs a redis-server (StartRedis)")

// ctxTimeout bounds a server's calls to its store.
func ctxTimeout(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 5*time.Second)
}
