package redisstore

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/headgate-go/headgate/core"
	"github.com/redis/go-redis/v9"
)

// startCluster starts a Redis Cluster of n masters on loopback ports, no
// replicas, created with redis-cli --cluster create, and waits until every
// node says it is ok. It returns the nodes' addresses.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not on PATH")
	}
	var addrs []string
	for range n {
		srv := ownRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		addrs = append(addrs, srv.addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	out, err := exec.Command("redis-cli", append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	for _, a := range addrs {
		c := newClient(t, a)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			info, _ := c.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: the cluster did not come up: %s", a, info)
			}
		}
	}
	return addrs
}

// TestRedisClusterOfThreeNodes: on a real three-master Redis Cluster,
// budgets on keys spread over the nodes each keep one shared budget through
// ClusterClients (the scripts touch one hash slot each: {key}): per key,
// two budgets (two clients, as two processes) share a tokens dimension —
// one spends the burst, the other's call does not fit; the first commits
// less than its estimate and the tokens come back to the other — and a
// 429 one of them hears pauses the other. Each budget's keys sit on the
// node that owns their slot, and the budgets span more than one node.
func TestRedisClusterOfThreeNodes(t *testing.T) {
	addrs := startCluster(t, 3)
	ctx := context.Background()
	client := func() *redis.ClusterClient {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	a, b := client(), client()
	budget := func(cc *redis.ClusterClient, key string) (*core.Budget, *Store) {
		s, err := New(cc, key, WithMaxInFlight(4))
		if err != nil {
			t.Fatal(err)
		}
		return core.MustBudget(core.PerSecond(1000), core.WithBurst(10), core.WithStore(record(s)),
			core.WithDimension("tokens", core.PerSecond(100))), s
	}
	nodes := map[string]bool{}
	for i := range 6 {
		key := "cluster-budget-" + strconv.Itoa(i)
		ba, sa := budget(a, key)
		bb, _ := budget(b, key)
		p, err := ba.AcquireCost(ctx, core.Cost{Dimension: "tokens", Amount: 100}) // the whole burst
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		short := func() context.Context {
			c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			t.Cleanup(cancel)
			return c
		}
		var rl *core.RateLimitError
		if _, err := bb.AcquireCost(short(), core.Cost{Dimension: "tokens", Amount: 50}); !errors.As(err, &rl) {
			t.Fatalf("%s: the other budget's 50 tokens after the burst was spent = %v, want a RateLimitError", key, err)
		}
		p.Commit(core.Cost{Dimension: "tokens", Amount: 10}) // 90 come back
		p.Release()
		// At once: checked on the turn Redis granted (no wait), not on a
		// deadline a loaded machine could miss.
		qctx, slot := withSlot(ctx)
		q, err := bb.AcquireCost(qctx, core.Cost{Dimension: "tokens", Amount: 50})
		if err != nil || slot.last().Wait > 0 {
			t.Fatalf("%s: the other budget's 50 tokens after the first committed 10 of 100 = %v after a wait of %v, want them at once",
				key, err, slot.last().Wait)
		}
		q.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
		q.Release()
		if d := ba.PauseRemaining(); d < time.Second {
			t.Errorf("%s: the first budget's PauseRemaining after the other heard a 429 = %v, want about 2s", key, d)
		}
		l, err := sa.AcquireLease(ctx)
		if err != nil {
			t.Fatalf("%s: lease: %v", key, err)
		}
		l.Release()
		node, err := a.MasterForKey(ctx, sa.state[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{sa.state[0], sa.leases[0]} {
			if slot, other := a.ClusterKeySlot(ctx, k).Val(), a.ClusterKeySlot(ctx, sa.state[0]).Val(); slot != other {
				t.Errorf("%s: key %s in slot %d, the state in %d: want one slot", key, k, slot, other)
			}
		}
		if n, err := node.Exists(ctx, sa.state[0]).Result(); err != nil || n != 1 {
			t.Errorf("%s: the state is not on the node that owns its slot (%s): %v, %v", key, node.Options().Addr, n, err)
		}
		nodes[node.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Errorf("the budgets' keys sit on %d node(s) of 3: the test does not cross nodes", len(nodes))
	}
	t.Logf("6 budgets on %d of the cluster's 3 nodes", len(nodes))
}
