package quotatest

import (
	"net/http"
	"net/http/httptest"
)

// Server is a Provider served over loopback (127.0.0.1) by an httptest.Server, for tests
// where a real client must meet a real server: connection reuse, hijacked and reset
// connections, bodies cut mid-stream. Every Provider method is available on it.
type Server struct {
	*Provider

	// URL is the base URL of the server, "http://127.0.0.1:port", with no trailing slash.
	URL string

	ts *httptest.Server
}

// NewServer returns a started Server enforcing cfg, or an error naming the first invalid
// field. The caller must Close it (t.Cleanup(s.Close) in a test).
func NewServer(cfg Config) (*Server, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(p)
	return &Server{Provider: p, URL: ts.URL, ts: ts}, nil
}

// Client returns an *http.Client for the server, over loopback: httptest's, whose idle
// connections Close closes. (It shadows Provider.Client, which is in-process.)
func (s *Server) Client() *http.Client { return s.ts.Client() }

// CloseClientConnections closes every connection to the server, idle or active.
func (s *Server) CloseClientConnections() { s.ts.CloseClientConnections() }

// Close shuts the server down and blocks until every request it was serving has finished.
func (s *Server) Close() { s.ts.Close() }
