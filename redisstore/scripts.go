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
//	la   the latest send time granted to a budget with extra dimensions,
//	     ns since ep: such turns go in the order they are taken [idle]
//	qi, qb, qu
//	     the last quota report's shape: the interval and burst it allows
//	     until qu, ns since ep [none: qu idle]
//	xp   the expiry the lean take last gave the key, ms on the store's
//	     clock; -1 when another script gave it one since [unknown]
//	d:<name>:t, d:<name>:i, d:<name>:b
//	     extra dimension <name>'s GCRA: tat, interval and burst, in units
//	     [new: idle, at its configured pace]
//	d:<name>:qi, d:<name>:qb, d:<name>:qu
//	     the shape of its last quota report [none]
//	d:<name>:n, d:<name>:f, d:<name>:m
//	     what an underspend may give back (core's storeDim): the number
//	     of the next reservation with a cost [0], the first whose marks
//	     are kept [0], and the marks, "seq slack seq slack …" [none]
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
// The GCRA, pause, AIMD and quota-shape arithmetic is the same as core's
// (gcra.reserve, gcra.reserveAt, gcra.cancel, gcra.settle, gcra.setPace,
// gcra.floorAfterPause, aimd.observe, pause.extend, shapeOf, shape.slow),
// operation for operation, so that a Redis store and a
// core.MemoryStore decide alike; store_test.go checks it step by step.
const prologue = head + machinery

// head is what every state script begins with (take after its lean path):
// the constants, the clock and the fields.
const head = `
if redis.replicate_commands then redis.replicate_commands() end
local IDLE = -4611686018427387904
local key = KEYS[1]
-- fmt writes x exactly: an integer (every time, interval and count) as
-- one, which is the cheaper format, anything else (the factor) in 17 digits.
local function fmt(x)
  if x == math.floor(x) and x > -9e18 and x < 9e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- FIELDS are the state's own fields, in the order load reads them.
local FIELDS = {'ep', 'tat', 'iv', 'bu', 'pu', 'ps', 'f', 'ld', 'lc', 'la', 'qi', 'qb', 'qu', 'xp'}

-- clock returns the store's now: Redis TIME, or the tests' clock.
local function clock()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]), tonumber(ARGV[2]) end
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2]) * 1000
end
`

// machinery is the state's general arithmetic, shared by the scripts.
const machinery = `
-- load reads the state at the clock's now; a script that read the clock
-- already passes it.
local function load(sec, nsec)
  if not sec then sec, nsec = clock() end
  local v = redis.call('HMGET', key, unpack(FIELDS))
  local s = {
    ep = tonumber(v[1]) or sec, tat = tonumber(v[2]) or IDLE,
    iv = tonumber(v[3]) or 0, bu = tonumber(v[4]) or 0,
    pu = tonumber(v[5]) or IDLE, ps = tonumber(v[6]) or 0,
    f = tonumber(v[7]) or 1, ld = tonumber(v[8]), lc = tonumber(v[9]) or 0,
    la = tonumber(v[10]) or IDLE, dims = {}, shift = 0,
    qi = tonumber(v[11]) or 0, qb = tonumber(v[12]) or 0, qu = tonumber(v[13]) or IDLE,
    xp = tonumber(v[14]),
  }
  -- was: the fields as the hash holds them (absent: their value when
  -- absent, but ep, which must be written), for save
  s.was = {}
  for _, f in ipairs(FIELDS) do s.was[f] = s[f] end
  s.was.ep = tonumber(v[1])
  local d = sec - s.ep
  if d > tonumber(ARGV[4]) then
    local shift = d * 1e9
    s.ep = sec
    s.tat = math.max(IDLE, s.tat - shift)
    s.pu = math.max(IDLE, s.pu - shift)
    s.la = math.max(IDLE, s.la - shift)
    s.qu = math.max(IDLE, s.qu - shift)
    s.lc = s.lc - shift
    if s.ld then s.ld = s.ld - shift end
    s.shift = shift -- for the extra dimensions (dim, save)
    d = 0
  end
  s.now = d * 1e9 + nsec
  return s
end

-- dim loads extra dimension name into s.dims, to be saved with s: nil when
-- it does not exist, unless create (then new: idle, its pace not yet set).
local function dim(s, name, create)
  local p = 'd:' .. name .. ':'
  local v = redis.call('HMGET', key, p .. 't', p .. 'i', p .. 'b', p .. 'qi', p .. 'qb', p .. 'qu',
    p .. 'n', p .. 'f', p .. 'm')
  local g
  if v[2] then
    g = {tat = math.max(IDLE, tonumber(v[1]) - s.shift), iv = tonumber(v[2]), bu = tonumber(v[3])}
  elseif create then
    g = {tat = IDLE}
  else
    return nil
  end
  g.qi, g.qb = tonumber(v[4]) or 0, tonumber(v[5]) or 0
  g.qu = math.max(IDLE, (tonumber(v[6]) or IDLE) - s.shift)
  g.seq, g.floor, g.marks = tonumber(v[7]) or 0, tonumber(v[8]) or 0, {}
  local m = {}
  for x in string.gmatch(v[9] or '', '%S+') do m[#m + 1] = tonumber(x) end
  for i = 1, #m, 2 do g.marks[#g.marks + 1] = {seq = m[i], slack = m[i + 1]} end
  g.p = p
  s.dims[#s.dims + 1] = g
  return g
end

-- save writes the fields of s that changed since load (a granted turn
-- in the common case: tat alone), those of its extra dimensions, and the
-- key's expiry (which the lean take then no longer knows: xp).
local function save(s)
  s.xp = -1
  local w = {}
  for _, f in ipairs(FIELDS) do
    local x = s[f]
    if x ~= nil and x ~= s.was[f] then
      w[#w + 1] = f
      w[#w + 1] = fmt(x)
    end
  end
  if #w > 0 then redis.call('HSET', key, unpack(w)) end
  local ahead = math.max(0, s.tat - s.now, s.pu - s.now)
  if s.shift > 0 then
    -- ep moved: so do the times of every extra dimension this run did
    -- not load (its tat and the end of its quota report)
    local loaded = {}
    for _, g in ipairs(s.dims) do loaded[g.p .. 't'], loaded[g.p .. 'qu'] = true, true end
    local all = redis.call('HGETALL', key)
    for i = 1, #all, 2 do
      local f = all[i]
      if not loaded[f] and string.sub(f, 1, 2) == 'd:' and (string.sub(f, -2) == ':t' or string.sub(f, -3) == ':qu') then
        redis.call('HSET', key, f, fmt(math.max(IDLE, tonumber(all[i + 1]) - s.shift)))
      end
    end
  end
  for _, g in ipairs(s.dims) do
    local m = {}
    for _, x in ipairs(g.marks) do m[#m + 1] = fmt(x.seq) .. ' ' .. fmt(x.slack) end
    redis.call('HSET', key, g.p .. 't', fmt(g.tat), g.p .. 'i', fmt(g.iv), g.p .. 'b', fmt(g.bu),
      g.p .. 'qi', fmt(g.qi), g.p .. 'qb', fmt(g.qb), g.p .. 'qu', fmt(g.qu),
      g.p .. 'n', fmt(g.seq), g.p .. 'f', fmt(g.floor), g.p .. 'm', table.concat(m, ' '))
    ahead = math.max(ahead, g.tat - s.now)
  end
  redis.call('PEXPIRE', key, tonumber(ARGV[3]) + math.ceil(ahead / 1e6))
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
// but tat there, so this reads the nine fields it needs, writes tat (and
// the expiry, when it moves: xp) and returns take's reply (gcra.reserve
// behind the pause, as below).
// Otherwise it leaves the clock it read (sec, nsec) to the general path,
// which reads every field.
//
// It is self-contained (the clock and the formatting inline, no table
// built, no function defined): on Redis each of those costs about as much
// as a command, and this is the path nearly every admission takes.
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
  local v = redis.call('HMGET', KEYS[1], 'ep', 'tat', 'iv', 'bu', 'pu', 'ps', 'f', 'qu', 'xp')
  local ep, iv, bu = tonumber(v[1]), tonumber(v[3]), tonumber(v[4])
  if ep and iv then
    local IDLE = -4611686018427387904
    local d = sec - ep
    local now = d * 1e9 + nsec
    if d <= tonumber(ARGV[4]) and now >= (tonumber(v[8]) or IDLE)
      and iv == math.floor(tonumber(ARGV[5]) / (tonumber(v[7]) or 1)) and bu == tonumber(ARGV[6]) then
      local tat, pu = tonumber(v[2]) or IDLE, tonumber(v[5]) or IDLE
      local maxWait = tonumber(ARGV[7])
      local base = math.max(tat, now)
      local at = math.max(now, pu, base - (bu - 1) * iv)
      local before, after = tat, base + iv
      local granted, paused = 0, 0
      if maxWait < 0 or at < now + maxWait then granted, tat = 1, after end
      if pu > now and at <= pu then paused = 1 end
      -- The key outlives its last use by the TTL, past the turns reserved
      -- and the pause. That expiry, to the ms on the store's clock, is
      -- often the one this path gave it last (xp): calls less than a ms
      -- apart skip PEXPIRE. Integers below 2^53, written as fmt writes them.
      local ttl = tonumber(ARGV[3]) + math.ceil(math.max(0, tat - now, pu - now) / 1e6)
      local xp = sec * 1000 + math.floor(nsec / 1e6) + ttl
      if xp ~= tonumber(v[9]) then
        if granted == 1 then
          redis.call('HSET', KEYS[1], 'tat', string.format('%d', tat), 'xp', string.format('%d', xp))
        else
          redis.call('HSET', KEYS[1], 'xp', string.format('%d', xp))
        end
        redis.call('PEXPIRE', KEYS[1], ttl)
      elseif granted == 1 then
        redis.call('HSET', KEYS[1], 'tat', string.format('%d', tat))
      end
      return {granted, at - now, at, paused, tonumber(v[6]) or 0, v[7] or '1', before, after, ep,
        math.max(0, pu - now)}
    end
  end
end
`

// takeScript reserves the next turn (gcra.reserve behind the pause) and,
// with extra dimensions, every cost at the turn's send time (the
// MemoryStore's Take, decision for decision).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] maxWait, ns (-1: none)        ARGV[8] k, the extra dimensions
//	then per dimension: name, interval (ns per unit), burst, cost
//
// It returns {granted, wait, at, paused, pause status, factor, tat before,
// tat after, ep, pause left}, times in ns since ep (wait and pause left
// from now), and with extra dimensions then {la before, and per dimension
// its tat before and after and the reservation's number}.
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
local out = {granted, at - s.now, at, paused, s.ps, fmt(s.f), before, after, s.ep, math.max(0, s.pu - s.now)}
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
return out
`)

// refundScript gives a turn back if nobody reserved after it (gcra.cancel),
// in the requests and in each extra dimension on its own.
//
//	ARGV[5], ARGV[6] tat before   ARGV[7], ARGV[8] tat after (seconds, ns)
//	ARGV[9] k, the extra dimensions; with k > 0, ARGV[10], ARGV[11] la
//	before, then per dimension: name, tat before, tat after (seconds, ns),
//	the reservation's number
//
// It returns 1 if it gave the request's turn back, else 0.
var refundScript = redis.NewScript(prologue + `
if redis.call('EXISTS', key) == 0 then return 0 end
local s = load()
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
if redis.call('EXISTS', key) == 0 then return 1 end
local MAXSPAN = 2305843009213693952
local s = load()
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

// reportScript applies one response: AIMD (aimd.observe), the quota
// reports (shapeOf; a pause that lasts until the reset covers the report's
// window), the pace, then the pause (pause.extend, gcra.floorAfterPause).
//
//	ARGV[5] the configured interval, ns   ARGV[6] the burst
//	ARGV[7] adaptive on (1/0)   ARGV[8] Decrease   ARGV[9] MinRate   ARGV[10] Increase
//	ARGV[11] refused (1/0)   ARGV[12] status   ARGV[13] pause, ns
//	ARGV[14] allowed at once after the pause   ARGV[15], ARGV[16] sent (seconds, ns)
//	ARGV[17] remaining   ARGV[18] limit   ARGV[19] reset, ns: the quota report
//	ARGV[20] k, then per extra dimension's quota report: name, remaining, limit, reset
//	then k2, then per extra dimension of the pace: name, interval, burst
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
local p = tonumber(ARGV[13])
local qi, qb, qu = shapeOf(tonumber(ARGV[17]), tonumber(ARGV[18]), tonumber(ARGV[19]), s.now)
if qi and (p == 0 or tonumber(ARGV[19]) > p) then s.qi, s.qb, s.qu = qi, qb, qu end
local quotas, byName = {}, {}
local kq = tonumber(ARGV[20])
for j = 1, kq do
  local o = 20 + (j - 1) * 4
  local qi, qb, qu = shapeOf(tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4]), s.now)
  if qi then
    quotas[#quotas + 1] = {'d:' .. ARGV[o + 1] .. ':', qi, qb, qu}
    byName[ARGV[o + 1]] = quotas[#quotas]
  end
end
pace(s, tonumber(ARGV[5]), tonumber(ARGV[6]))
-- the extra dimensions are re-paced now, as a budget re-paces on a report
local od = 21 + kq * 4
for j = 1, tonumber(ARGV[od]) do
  local o = od + (j - 1) * 3
  local g = dim(s, ARGV[o + 1], true)
  local q = byName[ARGV[o + 1]]
  if q then g.qi, g.qb, g.qu = q[2], q[3], q[4] end
  dimPace(s, g, tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3]), math.max(s.now, s.pu))
end
if p > 0 and s.now + p > s.pu then
  s.pu, s.ps = s.now + p, tonumber(ARGV[12])
  local allow = math.min(math.max(tonumber(ARGV[14]), 1), s.bu)
  s.tat = math.max(s.tat, s.pu + (s.bu - allow) * s.iv)
end
save(s)
for _, q in ipairs(quotas) do -- after save: ep has moved, if it moved
  redis.call('HSET', key, q[1] .. 'qi', fmt(q[2]), q[1] .. 'qb', fmt(q[3]), q[1] .. 'qu', fmt(q[4]))
end
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
