package redisstore

import "github.com/redis/go-redis/v9"

// The budget's state is one hash, {key}:state, with these fields (absent
// fields take the value in brackets):
//
//	ep   the epoch: Redis TIME seconds that the other times count from [now]
//	tat  GCRA theoretical arrival time, ns since ep [idle: -2^62]
//	iv   the effective emission interval, ns [unset: the next pace]
//	bu   the burst [unset]
//	pu   the end of the server's pause, ns since ep [none: -2^62]
//	ps   the status of the response that set the pause [0]
//	f    the adaptive factor [1]
//	ld   the last adaptive decrease, ns since ep [never]
//	lc   the last adaptive change, ns since ep [0]
//
// Times are kept relative to ep so that every one is an integer below 2^53,
// exact in Lua's doubles; ep moves forward (and the times with it) when now
// passes 2^22 s (48 days) from it. Callers see times on the store's clock:
// nanoseconds since the Unix epoch of Redis TIME, as int64.
//
// Every state script takes KEYS[1] = the state hash and begins with
//
//	ARGV[1], ARGV[2]  a clock for tests (seconds, nanoseconds); "" uses TIME
//	ARGV[3]           the idle TTL, ms
//	ARGV[4]           the rebase threshold, seconds
//
// The GCRA, pause and AIMD arithmetic is the same as core's (gcra.reserve,
// gcra.cancel, gcra.setPace, gcra.floorAfterPause, aimd.observe,
// pause.extend), operation for operation, so that a Redis store and a
// core.MemoryStore decide alike; store_test.go checks it step by step.
const prologue = `
if redis.replicate_commands then redis.replicate_commands() end
local IDLE = -4611686018427387904
local key = KEYS[1]
local function fmt(x) return string.format('%.17g', x) end

local function load()
  local sec, nsec
  if ARGV[1] ~= '' then
    sec, nsec = tonumber(ARGV[1]), tonumber(ARGV[2])
  else
    local t = redis.call('TIME')
    sec, nsec = tonumber(t[1]), tonumber(t[2]) * 1000
  end
  local v = redis.call('HMGET', key, 'ep', 'tat', 'iv', 'bu', 'pu', 'ps', 'f', 'ld', 'lc')
  local s = {
    ep = tonumber(v[1]) or sec, tat = tonumber(v[2]) or IDLE,
    iv = tonumber(v[3]) or 0, bu = tonumber(v[4]) or 0,
    pu = tonumber(v[5]) or IDLE, ps = tonumber(v[6]) or 0,
    f = tonumber(v[7]) or 1, ld = tonumber(v[8]), lc = tonumber(v[9]) or 0,
  }
  local d = sec - s.ep
  if d > tonumber(ARGV[4]) then
    local shift = d * 1e9
    s.ep = sec
    s.tat = math.max(IDLE, s.tat - shift)
    s.pu = math.max(IDLE, s.pu - shift)
    s.lc = s.lc - shift
    if s.ld then s.ld = s.ld - shift end
    d = 0
  end
  s.now = d * 1e9 + nsec
  return s
end

local function save(s)
  redis.call('HSET', key, 'ep', fmt(s.ep), 'tat', fmt(s.tat), 'iv', fmt(s.iv), 'bu', fmt(s.bu),
    'pu', fmt(s.pu), 'ps', fmt(s.ps), 'f', fmt(s.f), 'lc', fmt(s.lc))
  if s.ld then redis.call('HSET', key, 'ld', fmt(s.ld)) end
  local ahead = math.max(0, s.tat - s.now, s.pu - s.now)
  redis.call('PEXPIRE', key, tonumber(ARGV[3]) + math.ceil(ahead / 1e6))
end

-- abs turns a store-clock time sent as (seconds, nanoseconds) into ns since ep.
local function abs(s, sec, nsec) return (tonumber(sec) - s.ep) * 1e9 + tonumber(nsec) end

-- pace brings the state to the configured interval at the shared factor,
-- and to burst (gcra.setPace: re-times the next turn, creates no credit).
local function pace(s, base, burst)
  local interval = math.floor(base / s.f)
  if s.iv == 0 then
    s.iv, s.bu = interval, burst
    return
  end
  if interval == s.iv and burst == s.bu then return end
  -- re-time from the end of any pause: a new pace never stretches a pause
  local t0 = math.max(s.now, s.pu)
  local nextTurn = s.tat - (s.bu - 1) * s.iv
  local avail = 0
  if nextTurn <= t0 then
    avail = math.min(s.bu, math.floor((t0 - nextTurn) / s.iv) + 1)
  end
  local wait = math.max(0, nextTurn - t0)
  local scaled = math.floor(wait * interval / s.iv)
  s.iv, s.bu = interval, burst
  local tau = (burst - 1) * interval
  if avail == 0 then
    s.tat = t0 + scaled + tau
  else
    s.tat = t0 + tau - (math.min(avail, burst) - 1) * interval
  end
end
`

// takeScript reserves the next turn (gcra.reserve behind the pause).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] maxWait, ns (-1: none)
//
// It returns {granted, wait, at, paused, pause status, factor, tat before,
// tat after, ep, pause left}, times in ns since ep (wait and pause left
// from now).
var takeScript = redis.NewScript(prologue + `
local s = load()
pace(s, tonumber(ARGV[5]), tonumber(ARGV[6]))
local maxWait = tonumber(ARGV[7])
local base = math.max(s.tat, s.now)
local at = math.max(s.now, s.pu, base - (s.bu - 1) * s.iv)
local before, after = s.tat, base + s.iv
local granted = 0
if maxWait < 0 or at < s.now + maxWait then
  granted = 1
  s.tat = after
end
local paused = 0
if s.pu > s.now and at <= s.pu then paused = 1 end
save(s)
return {granted, at - s.now, at, paused, s.ps, fmt(s.f), before, after, s.ep, math.max(0, s.pu - s.now)}
`)

// refundScript gives a turn back if nobody reserved after it (gcra.cancel).
//
//	ARGV[5], ARGV[6] tat before   ARGV[7], ARGV[8] tat after (seconds, ns)
//
// It returns 1 if it gave the turn back, else 0.
var refundScript = redis.NewScript(prologue + `
if redis.call('EXISTS', key) == 0 then return 0 end
local s = load()
if s.tat ~= abs(s, ARGV[7], ARGV[8]) then return 0 end
s.tat = math.max(IDLE, abs(s, ARGV[5], ARGV[6]))
save(s)
return 1
`)

// reportScript applies one response: AIMD (aimd.observe), the pace, then
// the pause (pause.extend, gcra.floorAfterPause).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] adaptive on (1/0)   ARGV[8] Decrease   ARGV[9] MinRate   ARGV[10] Increase
//	ARGV[11] refused (1/0)   ARGV[12] status   ARGV[13] pause, ns
//	ARGV[14] allowed at once after the pause   ARGV[15], ARGV[16] sent (seconds, ns)
//
// It returns {pause left, pause status, factor}.
var reportScript = redis.NewScript(prologue + `
local s = load()
if ARGV[7] == '1' then
  local status = tonumber(ARGV[12])
  if ARGV[11] == '1' then
    if s.ld == nil or abs(s, ARGV[15], ARGV[16]) >= s.ld then
      s.f = math.max(tonumber(ARGV[9]), s.f * tonumber(ARGV[8]))
      s.ld, s.lc = s.now, s.now
    end
  elseif status < 500 and s.f < 1 then
    local since = (s.now - s.lc) / 1e9
    if since > 0 then
      s.f = math.min(1, s.f + tonumber(ARGV[10]) * since)
      s.lc = s.now
    end
  end
end
pace(s, tonumber(ARGV[5]), tonumber(ARGV[6]))
local p = tonumber(ARGV[13])
if p > 0 and s.now + p > s.pu then
  s.pu, s.ps = s.now + p, tonumber(ARGV[12])
  local allow = math.min(math.max(tonumber(ARGV[14]), 1), s.bu)
  s.tat = math.max(s.tat, s.pu + (s.bu - allow) * s.iv)
end
save(s)
return {math.max(0, s.pu - s.now), s.ps, fmt(s.f)}
`)

// statusScript reads the pause and the factor; it writes nothing.
//
// It returns {pause left, pause status, factor}.
var statusScript = redis.NewScript(prologue + `
if redis.call('EXISTS', key) == 0 then return {0, 0, '1'} end
local s = load()
return {math.max(0, s.pu - s.now), s.ps, fmt(s.f)}
`)

// The fleet's leases are a sorted set, {key}:leases: member = lease id,
// score = expiry in Redis TIME milliseconds. Lease scripts take KEYS[1] =
// the set and ARGV[1] = a clock for tests (ms; "" uses TIME).
const leasePrologue = `
local key = KEYS[1]
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- keep makes the set outlive a lease of ttl ms (never shortening it, for
-- processes configured with different TTLs).
local function keep(ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
`

// acquireScript takes a lease if fewer than the cap are held.
//
//	ARGV[2] lease id   ARGV[3] the cap   ARGV[4] lease TTL, ms
//
// It returns {1, held} when granted, else {0, ms until the first lease
// expires}.
var acquireScript = redis.NewScript(leasePrologue + `
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local n = redis.call('ZCARD', key)
if n < tonumber(ARGV[3]) then
  local ttl = tonumber(ARGV[4])
  redis.call('ZADD', key, now + ttl, ARGV[2])
  keep(ttl)
  return {1, n + 1}
end
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {0, math.max(1, tonumber(first[2]) - now)}
`)

// renewScript extends a held lease. ARGV[2] lease id, ARGV[3] lease TTL, ms.
// It returns 1, or 0 if the lease had expired.
var renewScript = redis.NewScript(leasePrologue + `
local exp = redis.call('ZSCORE', key, ARGV[2])
if not exp or tonumber(exp) <= now then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', key, 'XX', now + ttl, ARGV[2])
keep(ttl)
return 1
`)

// releaseScript gives a lease back. ARGV[2] lease id.
var releaseScript = redis.NewScript(leasePrologue + `
return redis.call('ZREM', key, ARGV[2])
`)
