package quotatest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/headgate-go/headgate/core/quotatest"
)

// trackedBody is a request body that records its Close.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func TestTransportLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Minute, Latency: 300 * time.Millisecond})
		c := p.Client()
		expect(t, c, "admitted", api, 200, nil)
		if d := time.Since(t0); d != 300*time.Millisecond {
			t.Errorf("admitted response after %v, want 300ms", d)
		}
		expect(t, c, "refused", api, 429, nil)
		if d := time.Since(t0); d != 600*time.Millisecond {
			t.Errorf("refused response at t0+%v, want t0+600ms: latency applies to refusals too", d)
		}
		p.SetLatency(time.Second)
		expect(t, c, "refused", api, 429, nil)
		if d := time.Since(t0); d != 1600*time.Millisecond {
			t.Errorf("after SetLatency(1s): response at t0+%v, want t0+1.6s", d)
		}
		p.ClearFaults()
		expect(t, c, "refused", api, 429, nil)
		if d := time.Since(t0); d != 1900*time.Millisecond {
			t.Errorf("after ClearFaults: response at t0+%v, want t0+1.9s (Config.Latency again)", d)
		}
	})
}

func TestTransportHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 5, Period: time.Second, Latency: 5 * time.Second})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		body := &trackedBody{Reader: strings.NewReader("payload")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api, body)
		_, err := p.Client().Do(req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do() error = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(t0); d != time.Second {
			t.Errorf("Do() returned after %v, want 1s (the deadline, not the latency)", d)
		}
		synctest.Wait()
		if !body.closed.Load() {
			t.Error("request body not closed")
		}
		if n := p.InFlight(); n != 0 {
			t.Errorf("InFlight() = %d after the client gave up, want 0 (the handler saw its context end)", n)
		}

		// A context already done: no arrival, and the body is still closed.
		body = &trackedBody{Reader: strings.NewReader("payload")}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, api, body)
		if _, err := p.Transport().RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RoundTrip with a done context: error = %v, want DeadlineExceeded", err)
		}
		if !body.closed.Load() || p.Count() != 1 {
			t.Errorf("done context: body closed %v, Count() %d; want true, 1", body.closed.Load(), p.Count())
		}
	})
}

func TestTransportClosesRequestBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second, Handler: echo})
		for _, want := range []struct {
			status int
			body   string
			reset  bool
		}{{200, "hello", false}, {429, `{"error":"rate_limited"}` + "\n", false}, {0, "", true}} {
			if want.reset {
				p.ResetConnections(1)
			}
			body := &trackedBody{Reader: strings.NewReader("hello")}
			resp, err := p.Client().Post(api, "text/plain", body)
			switch {
			case want.reset && err == nil:
				t.Fatal("reset connection: no error")
			case want.reset:
			case err != nil:
				t.Fatal(err)
			default:
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want.status || string(got) != want.body {
					t.Errorf("got %d %q, want %d %q", resp.StatusCode, got, want.status, want.body)
				}
			}
			synctest.Wait()
			if !body.closed.Load() {
				t.Errorf("status %d (reset %v): request body not closed", want.status, want.reset)
			}
		}
	})
}

func TestTransportSlowBodyStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second, Body: []byte("0123456789ab")})
		p.SetSlowBody(4, 100*time.Millisecond)
		resp, err := p.Client().Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if d := time.Since(t0); d != 0 || resp.ContentLength != 12 {
			t.Fatalf("head after %v with ContentLength %d, want at once with 12", d, resp.ContentLength)
		}
		for i, want := range []string{"0123", "4567", "89ab"} {
			buf := make([]byte, 4)
			if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != want {
				t.Fatalf("chunk %d: %q, %v; want %q", i, buf, err, want)
			}
			if d, want := time.Since(t0), time.Duration(i+1)*100*time.Millisecond; d != want {
				t.Errorf("chunk %d read at t0+%v, want t0+%v", i, d, want)
			}
		}
		if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("after the body: Read = %d, %v; want 0, EOF", n, err)
		}
	})
}

func TestTransportBodyReadHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second, Body: []byte("abc")})
		p.SetSlowBody(1, time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api, nil)
		resp, err := p.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if string(got) != "a" || !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) != 1500*time.Millisecond {
			t.Errorf("ReadAll = %q, %v at t0+%v; want \"a\", DeadlineExceeded at t0+1.5s", got, err, time.Since(t0))
		}
		synctest.Wait()
		if n := p.InFlight(); n != 0 {
			t.Errorf("InFlight() = %d after the deadline, want 0", n)
		}
	})
}

func TestTransportTruncatedBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noLength := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/handler" {
				w.Write([]byte("abcdefgh")) // no Content-Length: the provider declares the full 8
				return
			}
			w.Header().Set("Content-Length", "10")
			w.Write([]byte("0123456789"))
		})
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second, Handler: noLength})
		p.SetTruncatedBody(true)
		for _, tt := range []struct{ path, got string }{{"/", "01234"}, {"/handler", "abcd"}} {
			resp, err := p.Client().Get("http://api.example" + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != tt.got || err != io.ErrUnexpectedEOF || resp.ContentLength != int64(2*len(tt.got)) {
				t.Errorf("%s: read %q, %v with ContentLength %d; want %q, io.ErrUnexpectedEOF, %d",
					tt.path, got, err, resp.ContentLength, tt.got, 2*len(tt.got))
			}
		}
		resp, err := p.Client().Head(api) // no body: nothing to truncate
		if err != nil || resp.Body != http.NoBody {
			t.Errorf("HEAD: %v, body %T; want no error and http.NoBody", err, resp.Body)
		}
		p.SetTruncatedBody(false)
		if r := fetch(t, p.Client(), http.MethodGet, api); r.body != "0123456789" {
			t.Errorf("after SetTruncatedBody(false): body %q", r.body)
		}
	})
}

func TestTransportConnectionReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Minute})
		p.ResetConnections(2)
		for i := range 2 {
			if _, err := p.Client().Get(api); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("request %d: error %v, want one matching syscall.ECONNRESET", i, err)
			}
		}
		// Resets spend no quota and are not refusals.
		expect(t, p.Client(), "after the resets", api, 200, nil)
		arr := p.Arrivals()
		if arr[0].Outcome != quotatest.ConnectionReset || arr[0].Status != 0 || p.Refused() != 0 {
			t.Errorf("first arrival %+v, Refused() %d; want ConnectionReset, status 0, 0 refused", arr[0], p.Refused())
		}
		p.ResetConnections(5)
		p.ClearFaults()
		expect(t, p.Client(), "cleared", api, 429, nil)
	})
}

func TestTransportCloseCancelsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handlerErr atomic.Value
		stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				select {
				case <-time.After(100 * time.Millisecond):
				case <-r.Context().Done():
					handlerErr.Store(r.Context().Err())
					return
				}
			}
		})
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second, Handler: stream})
		resp, err := p.Client().Get(api)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 3)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := p.InFlight(); n != 0 {
			t.Errorf("InFlight() = %d as Close returns, want 0", n)
		}
		synctest.Wait()
		if err, _ := handlerErr.Load().(error); !errors.Is(err, context.Canceled) || p.InFlight() != 0 {
			t.Errorf("handler context %v, InFlight() %d; want Canceled and 0", err, p.InFlight())
		}
		if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
			t.Error("Read after Close succeeded")
		}
	})
}

func TestTransportBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 1 << 20
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 1, Period: time.Second, BodySize: size})
		resp, err := p.Client().Get(api)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		synctest.Wait()
		if p.InFlight() != 1 {
			t.Fatalf("InFlight() = %d before the body is read, want 1 (the handler waits for the reader)", p.InFlight())
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || len(got) != size || !bytes.HasPrefix(got, []byte(`{"pad":"aaa`)) || !bytes.HasSuffix(got, []byte(`aa"}`)) {
			t.Fatalf("ReadAll: %d bytes, %v; want %d bytes of padding", len(got), err, size)
		}
		synctest.Wait()
		if p.InFlight() != 0 {
			t.Errorf("InFlight() = %d after the body, want 0", p.InFlight())
		}
	})
}

func TestTransportNoBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/204":
				w.WriteHeader(http.StatusNoContent)
			case "/empty":
				w.Header().Set("Content-Length", "0")
			default:
				w.Header().Set("Content-Length", "4")
				w.Write([]byte("body"))
			}
		})
		p := quotatest.NewTestProvider(t, quotatest.Config{Requests: 10, Period: time.Second, Handler: h})
		for _, tt := range []struct {
			method, path string
			status       int
			length       int64
		}{{"HEAD", "/", 200, 4}, {"GET", "/204", 204, 0}, {"GET", "/empty", 200, 0}} {
			req, _ := http.NewRequest(tt.method, "http://api.example"+tt.path, nil)
			resp, err := p.Transport().RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || resp.Body != http.NoBody || resp.ContentLength != tt.length || resp.Request != req {
				t.Errorf("%s %s: %d, body %T, ContentLength %d; want %d, http.NoBody, %d, and the request",
					tt.method, tt.path, resp.StatusCode, resp.Body, resp.ContentLength, tt.status, tt.length)
			}
		}
	})
}
