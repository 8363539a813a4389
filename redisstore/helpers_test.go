package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests run against a real Redis: the server at REDIS_ADDR when it is
// set, else a redis-server this package starts on a free loopback port
// (when the binary is on PATH). With neither, the package's tests are
// skipped — unless CI is set, when they fail. Tests that stop, pause or
// reconfigure Redis always start their own server, so they need the binary
// (and fail under CI without it).

// testAddr is the shared server's address, set by TestMain.
var testAddr string

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode)) // a process of the fleet tests, not a test run
	}
	addr, stop, err := sharedRedis()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "redisstore: CI is set but no Redis server is available:", err)
			os.Exit(1)
		}
		fmt.Println("redisstore: tests skipped, no Redis server:", err)
		os.Exit(0)
	}
	testAddr = addr
	os.Setenv("REDIS_ADDR", addr) // for the examples
	redis.SetLogger(quiet{})      // the outage tests make go-redis log every failed dial
	code := m.Run()
	stop()
	os.Exit(code)
}

// sharedRedis returns the server for the package's tests: the one at
// REDIS_ADDR when set, else a redis-server it starts.
func sharedRedis() (addr string, stop func(), err error) {
	if addr = os.Getenv("REDIS_ADDR"); addr != "" {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			return "", nil, fmt.Errorf("REDIS_ADDR=%s: %w", addr, err)
		}
		return addr, func() {}, nil
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "", nil, errors.New("REDIS_ADDR is not set and redis-server is not on PATH")
	}
	srv, err := startRedis(0)
	if err != nil {
		return "", nil, err
	}
	return srv.addr, srv.stop, nil
}

// redisServer is a redis-server process on loopback, without persistence.
type redisServer struct {
	port int
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on port (0: a free one), with extra
// arguments, and waits until it answers.
func startRedis(port int, extra ...string) (*redisServer, error) {
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	dir, err := os.MkdirTemp("", "hgredis")
	if err != nil {
		return nil, err
	}
	srv := &redisServer{port: port, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	if err := srv.start(extra...); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return srv, nil
}

func (s *redisServer) start(extra ...string) error {
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}, extra...)
	cmd := exec.Command("redis-server", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on %s did not answer: %w", s.addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill stops the server at once (SIGKILL): its state is lost.
func (s *redisServer) kill() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

func (s *redisServer) stop() {
	s.kill()
	os.RemoveAll(s.dir)
}

// ownRedis starts a server for one test, stopped at its end. It skips (or,
// under CI, fails) when redis-server is not on PATH.
func ownRedis(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but redis-server is not on PATH")
		}
		t.Skip("redis-server is not on PATH")
	}
	srv, err := startRedis(0, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv
}

// newClient returns a client of the server at addr, closed at the test's
// end.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

var keySeq atomic.Int64

// testKey returns a key no other test uses, on a shared server too.
func testKey(t testing.TB) string {
	return fmt.Sprintf("hgtest:%d:%s:%d", os.Getpid(), t.Name(), keySeq.Add(1))
}

// newStore returns a store on the shared server under a fresh key, whose
// keys are deleted at the test's end.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	c := newClient(t, testAddr)
	// A generous timeout first (a test's own WithTimeout overrides it): a
	// loaded machine can hold a Redis call past DefaultTimeout, which would
	// make a test about something else fail.
	s, err := New(c, testKey(t), append([]Option{WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Del(context.Background(), s.state[0], s.leases[0]) })
	return s
}

// otherProcess is a second store on a's key, through a client of its own:
// another process of the fleet, with newStore's generous timeout.
func otherProcess(t testing.TB, a *Store, opts ...Option) *Store {
	t.Helper()
	s, err := New(newClient(t, testAddr), a.Key(), append([]Option{WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
