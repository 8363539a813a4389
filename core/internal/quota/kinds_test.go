package quota_test

import (
	"testing"

	"github.com/headgate-go/headgate/core/internal/quota"
)

// The rules that read a quota's kind and rate from its reports, each
// driven on the small simulation's servers (sim_test.go): what the model
// makes of them by the end of a batch.

// run simulates su and returns the model's last kind and likeliest rate.
func run(su simSetup) (simResult, quota.Kind, float64) {
	var kind quota.Kind
	var rate float64
	su.check = func(m *quota.Model) {
		kind = m.Kind()
		rate, _ = m.Rate()
	}
	r := simulate(su)
	return r, kind, rate
}

// setup is a batch of 200 calls from 20 callers over a 10 ms wire,
// configured at perSecond and burst, against srv.
func setup(srv simServer, perSecond, burst int64) simSetup {
	return simSetup{server: srv, calls: 200, callers: 20, owd: 10 * ms, tries: 6, seed: 1,
		interval: quota.Second / perSecond, burst: burst, maxWait: hour}
}

func TestWholeReturnsAreWindows(t *testing.T) {
	srv := simServer{alg: simFixed, limit: 20, window: quota.Second, reset: resetMillis}
	if _, kind, _ := run(setup(srv, 20, 20)); kind != quota.Windows {
		t.Errorf("kind %v on a fixed window that returns its 20 at each turn, want windows", kind)
	}
}

func TestPartialReturnsAreABucket(t *testing.T) {
	srv := simServer{alg: simGCRA, limit: 5, interval: quota.Second / 20, window: quota.Second, reset: resetMillis}
	if _, kind, _ := run(setup(srv, 20, 5)); kind != quota.Bucket {
		t.Errorf("kind %v on a GCRA that returns a token every 50 ms, want bucket", kind)
	}
}

func TestConfiguredTooFastLearnsTheRate(t *testing.T) {
	srv := simServer{alg: simGCRA, limit: 5, interval: quota.Second / 50, window: quota.Second, reset: resetCeil, retryAfter: true}
	if _, _, rate := run(setup(srv, 100, 10)); rate > 55 || rate < 40 {
		t.Errorf("likeliest rate %.1f/s configured at 100/s on a GCRA of 50/s, want about 50", rate)
	}
}

func TestWindowsWaitForTheTurn(t *testing.T) {
	srv := simServer{alg: simFixed, limit: 20, window: quota.Second, reset: resetMillis}
	r, _, _ := run(setup(srv, 40, 20)) // (configured at twice the window's rate)
	// 200 calls, 20 a window: ten windows, each spent whole at its turn.
	if r.refused > 0 || r.makespan > 9100*ms {
		t.Errorf("%d refused and a makespan of %.3fs for ten windows' calls, want none refused (nothing sent before a turn) and nine turns after the first window", r.refused, float64(r.makespan)/1e9)
	}
}
