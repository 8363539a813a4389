package redisstore

import "github.com/redis/go-redis/v9"

// The budget's state is one string, {key}:state: a head of fixed width
// that the common take reads with one GET and writes in place with one
// SETRANGE, then a tail with the rest. The head is struct.pack(HEAD):
//
//	a version byte, VERSION; then doubles:
//	ep   the epoch: Redis TIME seconds that the other times count from
//	tat  GCRA theoretical arrival time, ns since ep [idle: -2^62]
//	xp   the expiry the lean take last gave the key, ms on the store's
//	     clock; -1 when another script gave it one since
//	iv   the effective emission interval, ns [unset: 0, the next pace]
//	bu   the burst [unset: 0]
//	pu   the end of the server's pause, ns since ep [none: -2^62]
//	ps   the status of the response that set the pause [0]
//	f    the adaptive factor [1]
//	qu   the end of the last quota report's shape, ns since ep [none: -2^62]
//	dt   the latest tat of the extra dimensions, ns since ep, so that the
//	     lean take keeps the key as long as their turns [none: -2^62]
//
// tat and xp are adjacent, from byte 9: one SETRANGE writes both. The
// tail, absent while every field in it has its default, is a MessagePack
// map (cmsgpack) of:
//
//	ld   the last adaptive decrease, ns since ep [never]
//	fp   the factor's plateau, the one to be careful near (CUBIC's
//	     W_max) [1]
//	gw   the last response that could grow the factor, ns since ep [never]
//	gt   the time the factor grew since the last decrease, ns [0]
//	la   the latest send time granted to a budget with extra dimensions,
//	     ns since ep: such turns go in the order they are taken [idle]
//	qi, qb
//	     the last quota report's shape: the interval and burst it allows
//	     until qu [0]
//	d    the extra dimensions, by name: maps of t, i, b (tat, interval
//	     and burst, in units) [new: idle, at its configured pace], qi, qb,
//	     qu (the shape of its last quota report) [none] and n, f, m: what
//	     an underspend may give back (core's storeDim): the number of the
//	     next reservation with a cost [0], the first whose marks are kept
//	     [0], and the marks, {seq, slack, seq, slack, …} [none]
//
// A key that holds anything else — the hash of redisstore before this
// format (WRONGTYPE), or another version's string — fails every call with
// an *Error, in this process and in the other: a fleet that mixes the two
// formats stops (or fails open, each process on its share) instead of
// spending two quotas.
//
// Times are kept relative to ep so that every one is an integer below 2^53,
// exact in doubles; ep moves forward (and the times with it) when now
// passes 2^22 s (48 days) from it. Callers see times on the store's clock:
// nanoseconds since the Unix epoch of Redis TIME, as int64.
//
// Every state script takes KEYS[1] = the state key and begins with
//
//	ARGV[1], ARGV[2]  a clock for tests (seconds, nanoseconds); "" uses TIME
//	ARGV[3]           the idle TTL, ms
//	ARGV[4]           the rebase threshold, seconds
//
// The GCRA, pause, shared-factor and quota-shape arithmetic is the same as core's
// (gcra.Reserve, gcra.ReserveAt, gcra.Cancel, gcra.settle, gcra.SetPace,
// gcra.FloorAfterPause, fleet.Factor.Observe, cubic, pause.extend, shape.Of, shape.Pace.Slow),
// operation for operation, so that a Redis store and a
// core.MemoryStore decide alike; store_test.go checks it step by step.
const prologue = head + machinery

// head is what every state script begins with (take after its lean path):
// the constants, the clock and the formatting.
const head = `
if redis.replicate_commands then redis.replicate_commands() end
local IDLE = -4611686018427387904
local HEAD, VERSION = '<Bdddddddddd', 3
local key = KEYS[1]
-- fmt writes x exactly: an integer (every time, interval and count) as
-- one, which is the cheaper format, anything else (the factor) in 17 digits.
local function fmt(x)
  if x == math.floor(x) and x > -9e18 and x < 9e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- clock returns the store's now: Redis TIME, or the tests' clock.
local function clock()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]), tonumber(ARGV[2]) end
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2]) * 1000
end
`

// machinery is the state's general arithmetic, shared by the scripts.
const machinery = `
-- load reads the state at the clock's now (a script that read the clock
-- already passes it); s.found is false when there is none. The extra
-- dimensions come with it, in s.d by name (dim hands one out), their
-- times rebased with the others'.
local function load(sec, nsec)
  if not sec then sec, nsec = clock() end
  local v = redis.call('GET', key)
  local s = {ep = sec, tat = IDLE, iv = 0, bu = 0, pu = IDLE, ps = 0, f = 1, qu = IDLE,
    fp = 1, gt = 0, la = IDLE, qi = 0, qb = 0, d = {}, dims = {}, found = false}
  if v then
    if string.byte(v) ~= VERSION then
      error({err = 'headgate: redis store: ' .. key .. ' holds state of format ' .. tostring(string.byte(v)) ..
        ', want ' .. VERSION .. ': every process sharing it must run one format'})
    end
    local _, pos
    _, s.ep, s.tat, _, s.iv, s.bu, s.pu, s.ps, s.f, s.qu, _, pos = struct.unpack(HEAD, v)
    if pos <= #v then
      local x = cmsgpack.unpack(string.sub(v, pos))
      s.ld, s.fp, s.gw, s.gt, s.la, s.qi, s.qb = x.ld, x.fp, x.gw, x.gt, x.la, x.qi, x.qb
      for name, e in pairs(x.d) do
        local g = {tat = e.t, iv = e.i, bu = e.b, qi = e.qi, qb = e.qb, qu = e.qu,
          seq = e.n, floor = e.f, marks = {}}
        for i = 1, #e.m, 2 do g.marks[#g.marks + 1] = {seq = e.m[i], slack = e.m[i + 1]} end
        s.d[name] = g
      end
    end
    s.found = true
  end
  local d = sec - s.ep
  if d > tonumber(ARGV[4]) then
    local shift = d * 1e9
    s.ep = sec
    s.tat = math.max(IDLE, s.tat - shift)
    s.pu = math.max(IDLE, s.pu - shift)
    s.la = math.max(IDLE, s.la - shift)
    s.qu = math.max(IDLE, s.qu - shift)
    if s.ld then s.ld = s.ld - shift end
    if s.gw then s.gw = s.gw - shift end
    for _, g in pairs(s.d) do
      g.tat = math.max(IDLE, g.tat - shift)
      g.qu = math.max(IDLE, g.qu - shift)
    end
    d = 0
  end
  s.now = d * 1e9 + nsec
  return s
end

-- dim hands out extra dimension name of s, to be saved with it, and lists
-- it in s.dims: nil when it does not exist (a quota report may have left
-- its shape, with no pace yet), unless create (then new: idle, its pace
-- not yet set).
local function dim(s, name, create)
  local g = s.d[name]
  if not (g and g.iv) then
    if not create then return nil end
    if not g then
      g = {tat = IDLE, qi = 0, qb = 0, qu = IDLE, seq = 0, floor = 0, marks = {}}
      s.d[name] = g
    end
  end
  s.dims[#s.dims + 1] = g
  return g
end

-- save writes the state, head and tail, with one SET, and gives the key
-- its expiry: the TTL past the turns reserved (in every dimension) and
-- the pause. The lean take then no longer knows the expiry: xp is -1.
local function save(s)
  local dt, any, ds = IDLE, false, {}
  for name, g in pairs(s.d) do
    any = true
    dt = math.max(dt, g.tat)
    local m = {}
    for _, x in ipairs(g.marks) do
      m[#m + 1] = x.seq
      m[#m + 1] = x.slack
    end
    ds[name] = {t = g.tat, i = g.iv, b = g.bu, qi = g.qi, qb = g.qb, qu = g.qu, n = g.seq, f = g.floor, m = m}
  end
  local v = struct.pack(HEAD, VERSION, s.ep, s.tat, -1, s.iv, s.bu, s.pu, s.ps, s.f, s.qu, dt)
  if any or s.ld or s.fp ~= 1 or s.gw or s.gt ~= 0 or s.la ~= IDLE or s.qi ~= 0 or s.qb ~= 0 then
    v = v .. cmsgpack.pack({ld = s.ld, fp = s.fp, gw = s.gw, gt = s.gt, la = s.la, qi = s.qi, qb = s.qb, d = ds})
  end
  local ahead = math.max(0, s.tat - s.now, s.pu - s.now, dt - s.now)
  redis.call('SET', key, v, 'PX', tonumber(ARGV[3]) + math.ceil(ahead / 1e6))
end

-- abs turns a store-clock time sent as (seconds, nanoseconds) into ns since ep.
local function abs(s, sec, nsec) return (tonumber(sec) - s.ep) * 1e9 + tonumber(nsec) end

-- setPace brings g ({tat, iv, bu}) to interval and burst at t0
-- (gcra.setPace: re-times the next turn, creates no credit).
local function setPace(g, interval, burst, t0)
  if interval == g.iv and burst == g.bu then return end
  local nextTurn = g.tat - (g.bu - 1) * g.iv
  local avail = 0
  if nextTurn <= t0 then
    avail = math.min(g.bu, math.floor((t0 - nextTurn) / g.iv) + 1)
  end
  local wait = math.max(0, nextTurn - t0)
  local scaled = math.floor(wait * interval / g.iv)
  g.iv, g.bu = interval, burst
  local tau = (burst - 1) * interval
  if avail == 0 then
    g.tat = t0 + scaled + tau
  else
    g.tat = t0 + tau - (math.min(avail, burst) - 1) * interval
  end
end

-- slow returns interval and burst slowed by q's quota report while it
-- holds (shape.slow).
local function slow(now, q, interval, burst)
  if now < q.qu then
    interval = math.max(interval, q.qi)
    burst = math.max(1, math.min(burst, q.qb))
  end
  return interval, burst
end

-- shapeOf returns the interval, burst and end of a quota report of rem
-- left (limit in all) until reset ns from now, or nil (core's shapeOf).
local function shapeOf(rem, limit, reset, now)
  if rem < 0 or reset <= 0 then return nil end
  local spendable = math.max(rem, limit)
  if spendable <= 0 then return nil end
  return math.floor(math.max(0, reset - 1e9) / spendable), math.max(1, rem), now + reset
end

-- MAXMARKS is core's maxSlackMarks.
local MAXMARKS = 32

-- dimPace brings extra dimension g to its configured interval iv and
-- burst bu, slowed by its quota report, at t0 (storeDim.setPace: the marks
-- are converted in units, rounded down, capped at the new burst); a new
-- dimension takes them as they are.
local function dimPace(s, g, iv, bu, t0)
  iv, bu = slow(s.now, g, iv, bu)
  if not g.iv then
    g.iv, g.bu = iv, bu
    return
  end
  if iv == g.iv and bu == g.bu then return end
  local old = g.iv
  setPace(g, iv, bu, t0)
  for _, x in ipairs(g.marks) do x.slack = math.min(math.floor(x.slack / old), bu) * iv end
end

-- reserveDim spends g.n units sent at at (storeDim.reserve): it pushes the
-- reservation's mark, popping those it undercuts, and returns its number
-- (-1 for no cost).
local function reserveDim(g, at)
  if g.n == 0 then return -1 end
  local before = g.tat
  g.tat = math.max(g.tat, at) + g.n * g.iv
  local term = math.max(0, before - at)
  while #g.marks > 0 and g.marks[#g.marks].slack >= term do table.remove(g.marks) end
  g.marks[#g.marks + 1] = {seq = g.seq, slack = term}
  if #g.marks > MAXMARKS then
    g.floor = g.marks[1].seq + 1
    table.remove(g.marks, 1)
  end
  g.seq = g.seq + 1
  return g.seq - 1
end

-- pace brings the state to the configured interval at the shared factor,
-- and to burst, slowed by the quota report, from the end of any pause: a
-- new pace never stretches a pause.
local function pace(s, base, burst)
  local interval
  interval, burst = slow(s.now, s, math.floor(base / s.f), burst)
  if s.iv == 0 then
    s.iv, s.bu = interval, burst
    return
  end
  setPace(s, interval, burst, math.max(s.now, s.pu))
end
`

// leanTake is the take script's common case, decided before anything else
// is defined: a turn with no extra dimension on a state that exists, needs
// no rebase and is at the configured pace already — its interval at the
// shared factor and its burst, no quota report's shape holding (one that
// holds is in iv and bu already, as every script that sets one paces, but
// this path does not rely on it). The general path would change nothing
// but tat there, so this reads the head alone (one GET, one struct.unpack),
// writes tat in place (one SETRANGE; with the expiry, when it moves: xp)
// and returns take's reply (gcra.Reserve behind the pause, as below).
// Otherwise it leaves the clock it read (sec, nsec) to the general path,
// which reads the whole state.
//
// It is self-contained (the clock inline, no table built, no function
// defined): on Redis each of those costs about as much as a command, and
// this is the path nearly every admission takes. So is its reply: the
// doubles of struct.pack, which cost Redis and the client less than an
// array of integers.
const leanTake = `
if redis.replicate_commands then redis.replicate_commands() end
local sec, nsec
if ARGV[1] ~= '' then
  sec, nsec = tonumber(ARGV[1]), tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  sec, nsec = tonumber(t[1]), tonumber(t[2]) * 1000
end
if ARGV[8] == '0' then
  local v = redis.call('GET', KEYS[1])
  if v and string.byte(v) == 3 then
    local _, ep, tat, xp, iv, bu, pu, ps, f, qu, dt = struct.unpack('<Bdddddddddd', v)
    local d = sec - ep
    local now = d * 1e9 + nsec
    if d <= tonumber(ARGV[4]) and now >= qu and iv == math.floor(tonumber(ARGV[5]) / f) and bu == tonumber(ARGV[6]) then
      local maxWait = tonumber(ARGV[7])
      local base = math.max(tat, now)
      local at = math.max(now, pu, base - (bu - 1) * iv)
      local before, after = tat, base + iv
      local granted, paused = 0, 0
      if maxWait < 0 or at < now + maxWait then granted, tat = 1, after end
      if pu > now and at <= pu then paused = 1 end
      -- The key outlives its last use by the TTL, past the turns reserved
      -- (in every dimension) and the pause. That expiry, to the ms on the
      -- store's clock, is often the one this path gave it last (xp): calls
      -- less than a ms apart skip PEXPIRE.
      local ttl = tonumber(ARGV[3]) + math.ceil(math.max(0, tat - now, pu - now, dt - now) / 1e6)
      local exp = sec * 1000 + math.floor(nsec / 1e6) + ttl
      if exp ~= xp then
        if granted == 1 then
          redis.call('SETRANGE', KEYS[1], 9, struct.pack('<dd', tat, exp))
        else
          redis.call('SETRANGE', KEYS[1], 17, struct.pack('<d', exp))
        end
        redis.call('PEXPIRE', KEYS[1], ttl)
      elseif granted == 1 then
        redis.call('SETRANGE', KEYS[1], 9, struct.pack('<d', tat))
      end
      return struct.pack('<dddddddddd', granted, at - now, at, paused, ps, f, before, after, ep, math.max(0, pu - now))
    end
  end
end
`

// takeScript reserves the next turn (gcra.Reserve behind the pause) and,
// with extra dimensions, every cost at the turn's send time (the
// MemoryStore's Take, decision for decision).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] maxWait, ns (-1: none)        ARGV[8] k, the extra dimensions
//	then per dimension: name, interval (ns per unit), burst, cost
//
// It returns, as little-endian doubles (struct.pack), granted, wait, at,
// paused, pause status, factor, tat before, tat after, ep, pause left —
// times in ns since ep (wait and pause left from now) — and with extra
// dimensions then la before, and per dimension its tat before and after
// and the reservation's number.
var takeScript = redis.NewScript(leanTake + head + machinery + `
local s = load(sec, nsec)
pace(s, tonumber(ARGV[5]), tonumber(ARGV[6]))
local maxWait = tonumber(ARGV[7])
local k = tonumber(ARGV[8])
local gs = {}
for j = 1, k do
  local o = 8 + (j - 1) * 4
  local g = dim(s, ARGV[o + 1], true)
  dimPace(s, g, tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), math.max(s.now, s.pu))
  g.n = math.max(0, tonumber(ARGV[o + 4]))
  gs[j] = g
end
local at, before, after
local granted = 0
if k == 0 then
  -- charged from the arrival (gcra.reserve)
  local base = math.max(s.tat, s.now)
  at = math.max(s.now, s.pu, base - (s.bu - 1) * s.iv)
  before, after = s.tat, base + s.iv
  if maxWait < 0 or at < s.now + maxWait then
    granted = 1
    s.tat = after
  end
else
  -- behind every dimension turn granted before, when every cost fits,
  -- charged at the send time (gcra.reserveAt, gcra.reserveN)
  local nb = math.max(s.pu, s.la)
  for _, g in ipairs(gs) do
    if g.n > 0 then nb = math.max(nb, g.tat - (g.bu - g.n) * g.iv) end
  end
  at = math.max(s.now, nb, s.tat - (s.bu - 1) * s.iv)
  before, after = s.tat, s.tat
  if maxWait < 0 or at < s.now + maxWait then
    granted = 1
    s.tat = math.max(s.tat, at) + s.iv
    after = s.tat
  end
end
local paused = 0
if s.pu > s.now and at <= s.pu then paused = 1 end
local out = {granted, at - s.now, at, paused, s.ps, s.f, before, after, s.ep, math.max(0, s.pu - s.now)}
if k > 0 and granted == 1 then
  out[#out + 1] = s.la
  s.la = at
  for _, g in ipairs(gs) do
    out[#out + 1] = g.tat
    local seq = reserveDim(g, at)
    out[#out + 1] = g.tat
    out[#out + 1] = seq
  end
end
save(s)
return struct.pack('<' .. string.rep('d', #out), unpack(out))
`)

// refundScript gives a turn back if nobody reserved after it (gcra.Cancel),
// in the requests and in each extra dimension on its own.
//
//	ARGV[5], ARGV[6] tat before   ARGV[7], ARGV[8] tat after (seconds, ns)
//	ARGV[9] k, the extra dimensions; with k > 0, ARGV[10], ARGV[11] la
//	before, then per dimension: name, tat before, tat after (seconds, ns),
//	the reservation's number
//
// It returns 1 if it gave the request's turn back, else 0.
var refundScript = redis.NewScript(prologue + `
local s = load()
if not s.found then return 0 end
local ok = 0
if s.tat == abs(s, ARGV[7], ARGV[8]) then
  s.tat = math.max(IDLE, abs(s, ARGV[5], ARGV[6]))
  ok = 1
end
local k = tonumber(ARGV[9])
if k > 0 and ok == 1 then s.la = math.max(IDLE, abs(s, ARGV[10], ARGV[11])) end
for j = 1, k do
  local o = 11 + (j - 1) * 6
  local g = dim(s, ARGV[o + 1])
  if g and g.tat == abs(s, ARGV[o + 4], ARGV[o + 5]) then
    g.tat = math.max(IDLE, abs(s, ARGV[o + 2], ARGV[o + 3]))
    if #g.marks > 0 and g.marks[#g.marks].seq == tonumber(ARGV[o + 6]) then table.remove(g.marks) end
  end
end
save(s)
return ok
`)

// settleScript settles a granted turn's costs (storeDim.settle, per extra
// dimension): an overspend is charged from the send time, saturating
// MAXSPAN past it; an underspend gives back as much as the reservation's
// slack allows (the first mark after it; none: all of it), and lowers
// every mark by what it gave.
//
//	ARGV[5], ARGV[6] the turn's send time (seconds, ns)   ARGV[7] k
//	then per dimension: name, the reservation's number, cost, actual
//
// It returns 1.
var settleScript = redis.NewScript(prologue + `
local MAXSPAN = 2305843009213693952
local s = load()
if not s.found then return 1 end
local at = abs(s, ARGV[5], ARGV[6])
for j = 1, tonumber(ARGV[7]) do
  local o = 7 + (j - 1) * 4
  local g = dim(s, ARGV[o + 1])
  local seq = tonumber(ARGV[o + 2])
  local delta = tonumber(ARGV[o + 4]) - tonumber(ARGV[o + 3])
  if g and delta > 0 then
    local e = MAXSPAN
    if delta < math.floor(MAXSPAN / g.iv) then e = delta * g.iv end
    g.tat = math.min(math.max(g.tat, at) + e, at + MAXSPAN)
  elseif g and delta < 0 then
    local slack = math.huge
    if seq < g.floor then slack = 0 end
    for _, x in ipairs(g.marks) do
      if slack ~= 0 and x.seq > seq then
        slack = x.slack
        break
      end
    end
    local give = math.min(-delta * g.iv, slack)
    if give > 0 then
      g.tat = g.tat - give
      for _, x in ipairs(g.marks) do x.slack = math.max(0, x.slack - give) end
    end
  end
end
save(s)
return 1
`)

// reportScript applies one response: the shared factor (core's
// fleet.Factor.Observe, cubic), the quota reports (shape.Of; a pause that
// lasts until the reset covers the report's window), the pace, then the
// pause (pause.extend, gcra.FloorAfterPause).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] adaptive on (1/0)   ARGV[8] Decrease   ARGV[9] MinRate   ARGV[10] Increase
//	ARGV[11] refused (1/0)   ARGV[12] the factor decided   ARGV[13] its plateau
//	ARGV[14] status   ARGV[15] pause, ns
//	ARGV[16] allowed at once after the pause   ARGV[17], ARGV[18] sent (seconds, ns)
//	ARGV[19] remaining   ARGV[20] limit   ARGV[21] reset, ns: the quota report
//	ARGV[22] k, then per extra dimension's quota report: name, remaining, limit, reset
//	then k2, then per extra dimension of the pace: name, interval, burst
//
// It returns {pause left, pause status, factor}.
var reportScript = redis.NewScript(prologue + `
local s = load()
if ARGV[7] == '1' then
  local status = tonumber(ARGV[14])
  local sent = abs(s, ARGV[17], ARGV[18])
  local ld = s.ld or IDLE
  if ARGV[11] == '1' then
    if sent >= ld then
      local to, pl = tonumber(ARGV[12]), tonumber(ARGV[13])
      if not (to > 0 and to <= 1) then to = s.f * tonumber(ARGV[8]) end
      if not (pl > 0 and pl <= 1) then pl = s.f end
      local old = s.f
      s.f = math.min(s.f, math.max(tonumber(ARGV[9]), to))
      s.fp = math.max(s.f, math.min(pl, old))
      s.ld, s.gw, s.gt = s.now, s.now, 0
    end
  elseif status < 500 and status ~= 429 and s.f < 1 and sent > ld then
    local gw = s.gw or IDLE
    local room = tonumber(ARGV[19]) ~= 0 or tonumber(ARGV[21]) <= 0
    if room and s.now > gw then s.gt = s.gt + s.now - math.max(gw, ld, math.min(s.pu, s.now)) end
    s.gw = math.max(gw, s.now)
    if room then
      -- cubic(fp, Decrease, Increase, gt)
      local beta, inc, wmax = tonumber(ARGV[8]), tonumber(ARGV[10]), s.fp
      local k = wmax * (1 - beta) / inc
      local w = wmax
      if k > 0 then
        local d = s.gt / 1e9 - k
        w = wmax + wmax * (1 - beta) * d * d * d / (k * k * k)
      end
      if w > s.f then s.f = math.min(1, w) end
    end
  end
end
local p = tonumber(ARGV[15])
local qi, qb, qu = shapeOf(tonumber(ARGV[19]), tonumber(ARGV[20]), tonumber(ARGV[21]), s.now)
if qi and (p == 0 or tonumber(ARGV[21]) > p) then s.qi, s.qb, s.qu = qi, qb, qu end
local quotas, byName = {}, {}
local kq = tonumber(ARGV[22])
for j = 1, kq do
  local o = 22 + (j - 1) * 4
  local qi, qb, qu = shapeOf(tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4]), s.now)
  if qi then
    quotas[#quotas + 1] = {ARGV[o + 1], qi, qb, qu}
    byName[ARGV[o + 1]] = quotas[#quotas]
  end
end
pace(s, tonumber(ARGV[5]), tonumber(ARGV[6]))
-- the extra dimensions are re-paced now, as a budget re-paces on a report
local od = 23 + kq * 4
for j = 1, tonumber(ARGV[od]) do
  local o = od + (j - 1) * 3
  local g = dim(s, ARGV[o + 1], true)
  local q = byName[ARGV[o + 1]]
  if q then g.qi, g.qb, g.qu = q[2], q[3], q[4] end
  dimPace(s, g, tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), math.max(s.now, s.pu))
end
if p > 0 and s.now + p > s.pu then
  s.pu, s.ps = s.now + p, tonumber(ARGV[14])
  local allow = math.min(math.max(tonumber(ARGV[16]), 1), s.bu)
  s.tat = math.max(s.tat, s.pu + (s.bu - allow) * s.iv)
end
-- every dimension's report is kept, one not paced yet too (dim makes no
-- pace for it: the first Take with it does)
for _, q in ipairs(quotas) do
  local g = s.d[q[1]] or {tat = IDLE, seq = 0, floor = 0, marks = {}}
  g.qi, g.qb, g.qu = q[2], q[3], q[4]
  s.d[q[1]] = g
end
save(s)
return {math.max(0, s.pu - s.now), s.ps, fmt(s.f)}
`)

// statusScript reads the pause and the factor; it writes nothing.
//
// It returns {pause left, pause status, factor}.
var statusScript = redis.NewScript(prologue + `
local s = load()
if not s.found then return {0, 0, '1'} end
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
