// Package redisstore keeps a headgate budget's state in Redis, so that a
// fleet of processes — workers, pods, jobs calling one API with one key —
// spends from one budget instead of each spending the whole quota.
//
// # Model
//
// A *Store is a core.Store: build every process's budget with
// core.WithStore on a Store with the same key, and they share one GCRA
// arrival time, one server pause (with the status that set it) and one
// adaptive factor. Each admitted request costs one round trip: a Lua script
// (EVALSHA, reloaded after a NOSCRIPT) that reads the clock with Redis
// TIME — so the processes' clocks do not matter — applies the pace at the
// shared adaptive factor and the pause, and reserves the turn, or nothing
// when the turn comes at or after the caller's deadline. A call cancelled
// while it waits gives its turn back if nobody reserved after it. A
// response is read by the budget's own controller, as in one process (core
// reports its verdict), and applied by another script, atomically: a pause
// — the server's, a spent window until its turn, a refusal's wait —
// extends the shared pause (never shortens it) and bounds what goes at once
// when it ends; a refusal that shows the pace too fast (not a server pause,
// not a near miss) sets the shared factor to what the reporting budget's
// controller decided — its cut or its ease — once per burst across the
// whole fleet, and never raises it (core.Report's Factor and Plateau; a
// response to a request sent before the last decrease does not decrease it
// again); the factor recovers by CUBIC toward the plateau while reports
// show room, not in the fleet's pause (the port of core's fleet.Factor); a quota
// report (Remaining/Reset, x-ratelimit-remaining-tokens for a dimension)
// shapes the shared pace until its reset, as it shapes one budget's. The
// scripts decide exactly as core.MemoryStore does; the tests check it call
// by call.
//
// Extra dimensions (core.WithDimension, such as an LLM key's tokens per
// minute) are kept in the same key, by name: one script run reserves the
// request's turn and every cost at once, at the turn's send time, behind
// every turn granted before it to a budget with dimensions (FIFO across
// the fleet), and Permit.Commit settles through another (an overspend is
// charged, an underspend given back as far as no later reservation relied
// on it, by the rule of a budget in memory).
//
// As with any core.Store, a call waits for the turn it was given: a pause
// another process reported re-times the calls that reserve after it, not
// those already waiting (each process holds at most one reserved turn per
// waiting call); a decrease re-times a process's waiting calls once it
// learns of it, from its own report or its next turn.
// Concurrency slots (core.WithMaxInFlight) stay per process; for a
// fleet-wide cap use WithMaxInFlight here, with leases (AcquireLease,
// NewLeaseTransport).
//
// # Quick start
//
//	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
//	store, err := redisstore.New(client, "headgate:github")
//	if err != nil { ... }
//	budget := core.MustBudget(core.PerHour(5000), core.WithStore(store))
//	httpClient := &http.Client{Transport: core.NewTransport(nil, budget)}
//
// Any redis.UniversalClient works: a single server, Sentinel, Cluster or
// Ring; AUTH, TLS and ACL users are configured on the client. Every key of
// a budget carries the hash tag {key} — {key}:state and {key}:leases — so
// they sit in one Cluster slot. Keys expire when unused (WithTTL,
// WithLeaseTTL): an abandoned budget leaves nothing behind. The store runs
// only its own scripts, which touch only those keys and call TIME, GET,
// SET, SETRANGE, PEXPIRE, PTTL and ZADD, ZCARD, ZRANGE, ZREM,
// ZREMRANGEBYSCORE, ZSCORE, and use Redis's Lua libraries struct and
// cmsgpack. It needs Redis 4.0 or later (or a compatible server that runs
// Lua scripts with those libraries); an ACL user needs +evalsha +eval and
// those commands on ~{key}:*.
//
// # One format per fleet
//
// The state is one string, {key}:state, whose first byte is the version
// of its format; redisstore releases before it kept a hash under that same
// key. Every process sharing a key must run one format. A process that
// meets the other — the hash of an older release, or the string of another
// version — fails every call on that key (an *Error matching
// ErrUnavailable, naming the key and the mix) and changes nothing: with
// WithFailClosed it stops, with WithFailOpen it paces on its share. Two
// formats never spend two quotas silently. Upgrade a fleet by stopping it,
// or let the processes of the format that did not write the key fail until
// they are replaced (the key expires WithTTL after the last of the others
// stops).
//
// # When Redis is unreachable or slow
//
// Every call to Redis is bounded by WithTimeout (200 ms by default). After
// a failure the store leaves Redis alone for WithProbeInterval (1 s), then
// lets one call try again. Choose what calls do meanwhile:
//
//   - WithFailClosed (the default): Take returns an *Error, matching
//     ErrUnavailable, so Acquire — and the request — fails at once. The
//     fleet never spends more than its budget, and stops while Redis is
//     down.
//   - WithFailOpen(share): the store paces calls with a budget in the
//     process at share of the rate and of the burst (1/N for N processes
//     keeps the fleet within its quota). While Redis is up the fallback
//     hears every response and adopts the pause and the adaptive factor in
//     each of Redis's replies, so it starts from what the fleet knew: a
//     pause another process heard holds this one too after Redis dies.
//
// Either way the budget reports core.StoreFailure (with the error) when
// the store goes down and core.StoreRecovered when it answers again, once
// per outage, to its observer; WithOnFailure reports each failed call to
// Redis and WithOnRecover its return. A Redis that comes back without its data (restarted
// without persistence) gives the fleet an idle budget: a full burst, no
// pause, the configured rate.
//
// # Fleet-wide concurrency
//
// WithMaxInFlight(n) caps the requests open across the fleet with leases: a
// sorted set of lease ids scored by their expiry. A held lease is renewed
// every third of WithLeaseTTL; a process that dies stops renewing, and its
// leases return to the fleet a TTL later. Wrap the budget's transport:
//
//	store, _ := redisstore.New(client, "headgate:github", redisstore.WithMaxInFlight(50))
//	budget := core.MustBudget(core.PerHour(5000), core.WithStore(store))
//	rt := redisstore.NewLeaseTransport(core.NewTransport(nil, budget), store)
//
// or call Store.AcquireLease and Lease.Release around each request.
package redisstore
