#!lua name=@LIBRARY@

local MAX_BYTES = @MAX_BYTES@   -- profile and caps JSON
local MAX_FIELD = @MAX_FIELD@   -- status, load, capacity, lastSeen, trust
local MAX_CAPS = @MAX_CAPS@
local MAX_QUERY = @MAX_QUERY@
local MAX_PAGE = @MAX_PAGE@
local MAX_ID = 128              -- a longer member of a shared set is no instance id
local MAX_SEEN = 1024           -- instances one FIND_BEST scores at most
local SWEEP_BUDGET = 1024       -- index removals one SWEEP or EXPIRE makes at most
local MAX_BEATS = @MAX_BEATS@          -- instances one BEAT refreshes at most
local LOAD_STEP = @LOAD_STEP@           -- a load change under this share of capacity publishes nothing
local MAX_INSTANCES = @MAX_INSTANCES@   -- live instances of one agent, when its grant names no maximum
local PRUNE = 64                        -- expired entries of an agent's instance set one REGISTER removes
local FIELDS = {'profile', 'status', 'load', 'capacity', 'lastSeen', 'trust'}
local OVERSIZE = {false, false, false, false, false}  -- the fields after an oversized entry's size

local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

-- A read; a key of the wrong type (any agent may SET the shared ones) reads as false.
local function read(...)
  local reply = redis.pcall(...)
  if failed(reply) then return false end
  return reply
end

-- A write to a shared key; one of the wrong type is replaced instead of failing every writer.
local function write(cmd, key, ...)
  local reply = redis.pcall(cmd, key, ...)
  if failed(reply) and string.find(reply.err, 'WRONGTYPE', 1, true) then
    redis.call('DEL', key)
    reply = redis.pcall(cmd, key, ...)
  end
  if failed(reply) then error(reply) end
  return reply
end

-- A trust field as a number: 1 when missing (an agent of the deployment publishes none),
-- nil when it is not a plain decimal in [0, 1] (discovery._validate.TRUST_PATTERN).
local function trust_of(raw)
  if not raw then return 1 end
  if type(raw) ~= 'string' or #raw > MAX_FIELD or not string.find(raw, '^[0-9.]+$') then return nil end
  local t = tonumber(raw)
  if not t or t < 0 or t > 1 then return nil end
  return t
end

-- The server's clock in milliseconds: every writer's expiry times are on one clock.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The agent an instance id belongs to: the id up to its last '-' (``reader-1a2b3c4d`` -> reader),
-- as the ACL of ``a2a redis-config`` proves it (an agent writes only hashes of ids starting with
-- its own name and a dash).
local function agent_of(id)
  return string.match(id, '^(.*)%-[^%-]*$') or id
end

-- Publish one change event on the namespace's channel (views that follow the whole registry),
-- then on the channel of each capability in caps (id -> proficiency) and on the agent's own:
-- a view that follows only some capabilities or agents hears of those alone. The copies go
-- out one after another within this call, so a view following several of an instance's
-- channels receives them back to back and keeps the first.
local function announce(prefix, event, caps, agent)
  local payload = cjson.encode(event)
  redis.call('PUBLISH', prefix .. 'events', payload)
  for cap in pairs(caps or {}) do redis.call('PUBLISH', prefix .. 'events:cap:' .. tostring(cap), payload) end
  if agent then redis.call('PUBLISH', prefix .. 'events:agent:' .. agent, payload) end
end

local function page(count)
  count = tonumber(count) or MAX_PAGE
  if count < 1 or count > MAX_PAGE then return MAX_PAGE end
  return count
end

-- A hash field's value when it is at most MAX_BYTES long, else nil.
local function small(key, field)
  local size = read('HSTRLEN', key, field)
  if not size or size == 0 or size > MAX_BYTES then return nil end
  return read('HGET', key, field) or nil
end

-- Stored capabilities (JSON id -> proficiency) as a table; nil when missing, too large or not one.
local function decode_caps(raw)
  if type(raw) ~= 'string' or #raw > MAX_BYTES then return nil end
  local ok, caps = pcall(cjson.decode, raw)
  if not ok or type(caps) ~= 'table' then return nil end
  local n = 0
  for _ in pairs(caps) do
    n = n + 1
    if n > MAX_CAPS then return nil end
  end
  return caps
end

-- The roster's grants, which the admin writes (``a2a redis-config --load``): agent name -> JSON
-- {capabilities = {ids}, maxInstances = n}. Returns nil when the namespace has none (an open
-- deployment: any agent may advertise anything), else a lookup from an agent's name to its
-- grant ({caps = set of ids, max = n}) or false (no grant, or one that does not decode: that
-- agent may advertise nothing). Lookups are cached for the call.
local function grants_of(prefix)
  local key = prefix .. 'grants'
  if read('EXISTS', key) ~= 1 then return nil end
  local cache = {}
  return function(agent)
    local grant = cache[agent]
    if grant ~= nil then return grant end
    grant = false
    local raw = #agent <= MAX_ID and small(key, agent)
    if raw then
      local ok, t = pcall(cjson.decode, raw)
      if ok and type(t) == 'table' and type(t.capabilities) == 'table' then
        local caps = {}
        for _, cap in ipairs(t.capabilities) do
          if type(cap) == 'string' then caps[cap] = true end
        end
        local max = tonumber(t.maxInstances) or MAX_INSTANCES
        grant = {caps = caps, max = max}
      end
    end
    cache[agent] = grant
    return grant
  end
end

-- Nil when every capability of caps (id -> proficiency) is in grant, else the first one that is not.
local function ungranted(grant, caps)
  for cap in pairs(caps) do
    if not grant or not grant.caps[tostring(cap)] then return tostring(cap) end
  end
  return nil
end

-- An instance gone from the registry: out of the indexes, with a down event when it had
-- registered (it has a capsof record) or ``always`` says so (EXPIRE: an expiry entry is
-- written by registrations and beats; a forged one costs views no more than a forged
-- PUBLISH). Ids of a padded set cost views no events. Returns the index removals made.
local function forget(prefix, id, keys, always)
  local record = small(keys.capsof, id)
  local removals = 0
  for cap in pairs(decode_caps(record) or {}) do
    write('ZREM', prefix .. 'cap:' .. tostring(cap), id)
    removals = removals + 1
  end
  write('HDEL', keys.capsof, id)
  write('SREM', keys.instances, id)
  write('ZREM', prefix .. 'expiry', id)
  if record or always then announce(prefix, {e = 'down', id = id}, decode_caps(record), agent_of(id)) end
  return removals
end

-- Take instance id out of the capability sets its hash and its capsof record name.
local function unindex(prefix, id, key, capsof)
  for _, caps in ipairs({decode_caps(small(key, 'caps')) or {}, decode_caps(small(capsof, id)) or {}}) do
    for cap in pairs(caps) do write('ZREM', prefix .. 'cap:' .. tostring(cap), id) end
  end
end

-- An instance's fields (FIELDS), or nil when it has no profile; an entry over the size
-- bounds comes back as {its size, false, ...}: readers refuse it without its bytes
-- crossing the network.
local function row(key)
  local size = read('HSTRLEN', key, 'profile')
  if not size or size == 0 then return nil end
  if size > MAX_BYTES then return {size, unpack(OVERSIZE)} end
  for i = 2, #FIELDS do
    local n = read('HSTRLEN', key, FIELDS[i]) or 0
    if n > MAX_FIELD then return {n, unpack(OVERSIZE)} end
  end
  local r = read('HMGET', key, unpack(FIELDS))
  if not r then return nil end
  -- Beats between full heartbeats only push the expiry (BEAT): the last one was ttl - PTTL ago.
  local ttl = (read('HSTRLEN', key, 'ttl') or 0) <= MAX_FIELD and tonumber(read('HGET', key, 'ttl'))
  local left = redis.call('PTTL', key)
  if ttl and left > 0 and left <= ttl then r[5] = tostring(now_ms() - (ttl - left)) end
  return r
end

local function rows(prefix, ids, out, only_available)
  for _, id in ipairs(ids) do
    if #id <= MAX_ID then
      local r = row(prefix .. 'inst:' .. id)
      if r and (not only_available or r[2] == 'available') then
        out[#out + 1] = id
        for i = 1, #FIELDS do out[#out + 1] = r[i] end
      end
    end
  end
  return out
end

-- Replaces the whole hash (DEL first: fields someone added do not survive a re-registration).
-- The instance expires ttl_ms from now, on the server's clock: its hash by PEXPIRE, and its
-- entry in the expiry sorted set (score = when) that EXPIRE reads.
-- KEYS: inst hash, instances set, capsof hash
-- ARGV: prefix, id, ttl_ms, name, status, load, capacity, profile_json, caps_json,
--       trust ('' when the instance publishes none)
local function register(keys, args)
  local key, prefix, id, status, trust = keys[1], args[1], args[2], args[5], args[10] or ''
  local caps = decode_caps(args[9])
  if not caps or #args[8] > MAX_BYTES then
    return redis.error_reply('ERR profile or capabilities over the registry size bounds')
  end
  if trust ~= '' and not trust_of(trust) then return redis.error_reply('ERR invalid trust') end
  local now = now_ms()
  local grants = grants_of(prefix)
  if grants then
    -- The roster binds what an agent may advertise, and how many instances it may run.
    local agent = agent_of(id)
    if args[4] ~= agent then
      return redis.error_reply('ERR refused: instance ' .. string.sub(id, 1, 100) .. ' is not named for its agent')
    end
    local grant = grants(agent)
    if not grant then
      return redis.error_reply('ERR refused: agent ' .. string.sub(agent, 1, 100) .. ' has no entry in the roster')
    end
    local cap = ungranted(grant, caps)
    if cap then
      return redis.error_reply('ERR refused: the roster does not let agent ' .. agent .. ' advertise '
        .. string.sub(cap, 1, 100))
    end
    -- Its live instances are counted in a set only it writes (a bounded prune, an O(log n) count).
    local mine = prefix .. 'insts:' .. agent
    local stale = read('ZRANGEBYSCORE', mine, '-inf', now, 'LIMIT', 0, PRUNE) or {}
    if #stale > 0 then write('ZREM', mine, unpack(stale)) end
    local live = read('ZCOUNT', mine, '(' .. now, '+inf') or 0
    if not read('ZSCORE', mine, id) and live >= grant.max then
      return redis.error_reply('ERR refused: agent ' .. agent .. ' already runs ' .. grant.max
        .. ' instances, the most its roster entry allows')
    end
    write('ZADD', mine, now + tonumber(args[3]), id)
  end
  unindex(prefix, id, key, keys[3])
  redis.call('DEL', key)
  redis.call('HSET', key, 'name', args[4], 'status', status, 'load', args[6], 'capacity', args[7],
             'lastSeen', now, 'profile', args[8], 'caps', args[9], 'pload', args[6], 'ttl', args[3])
  if trust ~= '' then redis.call('HSET', key, 'trust', trust) end
  redis.call('PEXPIRE', key, tonumber(args[3]))
  write('ZADD', prefix .. 'expiry', now + tonumber(args[3]), id)
  write('SADD', keys[2], id)
  write('HSET', keys[3], id, args[9])
  if status ~= 'offline' then
    for cap, prof in pairs(caps) do write('ZADD', prefix .. 'cap:' .. cap, prof, id) end
  end
  announce(prefix, {e = 'reg', id = id}, caps, args[4])
  return 1
end

-- The full heartbeat, which a registry sends when the state changed and every few beats
-- (discovery._beats.VERIFY_EVERY); the beats between go by BEAT.
-- It checks the hash is still what was registered: the name, a known status,
-- and the SHA-1 of profile .. caps equal to the fingerprint the registering process
-- remembers (an empty fingerprint skips that check). The capability sets are rewritten
-- on every beat (ZADD while available, ZREM otherwise), which also undoes any edit of
-- this instance's index entries since the last one.
-- The trust field is written (or removed, for '') like load.
-- A heartbeat publishes an st event only when it changes what routing reads: the status,
-- the capacity, the trust, or the load by at least LOAD_STEP of the capacity since the load
-- last published (kept in the hash as pload; the hysteresis keeps a load wavering around a
-- value from publishing every beat). Views hear nothing from an unchanged instance: they
-- learn of its death from the down event EXPIRE publishes when its expiry passes.
-- It also puts the id back in the instances set and its capsof record, which anyone may
-- edit, so listings and the sweeper's announcements are restored within VERIFY_EVERY beats
-- (an id put back is announced as a reg event: views loaded meanwhile lack it). With
-- grants, an instance advertising what its agent's grant no longer allows is reported
-- unknown (it re-registers, and is refused).
-- KEYS: inst hash, instances set, capsof hash
-- ARGV: prefix, id, ttl_ms, status, load, capacity, name, fingerprint, trust
-- Returns 0 when the instance is unknown (expired, or the server lost its data) or its
-- hash was altered (over the size bounds included): re-register.
local function heartbeat(keys, args)
  local key, prefix, id, status, fingerprint = keys[1], args[1], args[2], args[4], args[8]
  local trust = args[9] or ''
  if trust ~= '' and not trust_of(trust) then return redis.error_reply('ERR invalid trust') end
  local profile, raw = small(key, 'profile'), small(key, 'caps')
  if not profile or not raw then return 0 end
  local h = read('HMGET', key, 'status', 'name', 'capacity', 'trust', 'pload')
  if not h then return 0 end
  local old = h[1]
  if old ~= 'available' and old ~= 'busy' and old ~= 'offline' then return 0 end
  if fingerprint ~= '' then
    if h[2] ~= args[7] or redis.sha1hex(profile .. raw) ~= fingerprint then return 0 end
  end
  local caps = decode_caps(raw)
  if not caps then return 0 end
  local load, capacity, now = tonumber(args[5]) or 0, tonumber(args[6]) or 0, now_ms()
  local grants = grants_of(prefix)
  if grants then
    -- A grant the admin narrowed since the registration: re-register (and be refused).
    if ungranted(grants(agent_of(id)), caps) then return 0 end
    write('ZADD', prefix .. 'insts:' .. agent_of(id), now + tonumber(args[3]), id)
  end
  local published = tonumber(h[5])
  local changed = old ~= status or h[3] ~= args[6] or (h[4] or '') ~= trust or not published
    or (capacity > 0 and math.abs(load - published) >= LOAD_STEP * capacity)
  redis.call('HSET', key, 'status', status, 'load', args[5], 'capacity', args[6], 'lastSeen', now,
             'ttl', args[3])
  if changed then redis.call('HSET', key, 'pload', args[5]) end
  if trust == '' then redis.call('HDEL', key, 'trust') else redis.call('HSET', key, 'trust', trust) end
  redis.call('PEXPIRE', key, tonumber(args[3]))
  write('ZADD', prefix .. 'expiry', now + tonumber(args[3]), id)
  local relisted = write('SADD', keys[2], id) == 1  -- someone took it out of the listing
  write('HSET', keys[3], id, raw)
  for cap, prof in pairs(caps) do
    local score = tonumber(prof)
    if status ~= 'offline' and score then
      write('ZADD', prefix .. 'cap:' .. tostring(cap), score, id)
    else
      write('ZREM', prefix .. 'cap:' .. tostring(cap), id)
    end
  end
  if changed then
    announce(prefix, {e = 'st', id = id, status = status, load = load, capacity = capacity, ts = now,
      trust = tonumber(trust)}, caps, h[2])
  elseif relisted then  -- views that loaded a snapshot since then lack it: they read it back
    announce(prefix, {e = 'reg', id = id}, caps, h[2])
  end
  return 1
end

-- The beats between full heartbeats, for many instances in one call: each hash's expiry
-- is pushed back ttl_ms and so is its entry in the expiry set (and, with grants, in its
-- agent's instance set; an instance of an agent without a grant is reported lost, so it
-- re-registers and is refused). Nothing is published.
-- KEYS: inst hashes (at most MAX_BEATS)
-- ARGV: prefix, ttl_ms
-- Returns the positions (from 1) of the keys that are gone, or are no instance hash of
-- this prefix: re-register those.
local function beat(keys, args)
  local prefix, ttl = args[1], tonumber(args[2])
  if #keys > MAX_BEATS then return redis.error_reply('ERR at most ' .. MAX_BEATS .. ' beats per call') end
  if not ttl or ttl < 1 then return redis.error_reply('ERR ttl_ms must be positive') end
  local at, head = now_ms() + ttl, prefix .. 'inst:'
  local lost, scores = {}, {}
  local grants = grants_of(prefix)
  local mine = {}  -- with grants: agent -> {at, id, at, id, ...} for its instance set
  for i, key in ipairs(keys) do
    local id = string.sub(key, #head + 1)
    local agent = agent_of(id)
    if string.sub(key, 1, #head) == head and #id <= MAX_ID and (not grants or grants(agent))
        and redis.call('PEXPIRE', key, ttl) == 1 then
      scores[#scores + 1] = at
      scores[#scores + 1] = id
      if grants then
        local list = mine[agent] or {}
        list[#list + 1] = at
        list[#list + 1] = id
        mine[agent] = list
      end
    else
      lost[#lost + 1] = i
    end
  end
  if #scores > 0 then write('ZADD', prefix .. 'expiry', unpack(scores)) end
  for agent, list in pairs(mine) do write('ZADD', prefix .. 'insts:' .. agent, unpack(list)) end
  return lost
end

-- KEYS: inst hash, instances set, capsof hash
-- ARGV: prefix, id
local function deregister(keys, args)
  local key, prefix, id = keys[1], args[1], args[2]
  local caps = decode_caps(small(key, 'caps')) or decode_caps(small(keys[3], id))
  local name = read('HGET', key, 'name')
  if type(name) ~= 'string' or #name > MAX_ID then name = agent_of(id) end
  unindex(prefix, id, key, keys[3])
  redis.call('DEL', key)
  write('SREM', keys[2], id)
  write('HDEL', keys[3], id)
  write('ZREM', prefix .. 'expiry', id)
  if read('EXISTS', prefix .. 'grants') == 1 then write('ZREM', prefix .. 'insts:' .. agent_of(id), id) end
  announce(prefix, {e = 'down', id = id}, caps, name)
  return 1
end

-- One page of a pass over the instances set: ids whose hash expired leave the indexes
-- (the capability sets their capsof record names, with a down event; an id without
-- a record never registered here, or did so under an older layout: its entries stay
-- behind and readers skip them). EXPIRE finds expired instances as they expire; this
-- slower pass clears what no expiry entry names (ids added to the shared set by hand).
-- KEYS: instances set, capsof hash
-- ARGV: prefix, cursor, count
-- Returns {next cursor ('0': the pass is over), ids removed}.
local function sweep(keys, args)
  local prefix = args[1]
  local scan = read('SSCAN', keys[1], args[2], 'COUNT', page(args[3]))
  if not scan then return {'0', 0} end
  local removed, budget = 0, SWEEP_BUDGET
  for _, id in ipairs(scan[2]) do
    if budget <= 0 then break end
    budget = budget - 1
    if #id > MAX_ID then
      write('SREM', keys[1], id)
    elseif redis.call('EXISTS', prefix .. 'inst:' .. id) == 0 then
      budget = budget - forget(prefix, id, {instances = keys[1], capsof = keys[2]})
      removed = removed + 1
    end
  end
  return {scan[1], removed}
end

-- The sweeper: instances whose expiry has passed leave the indexes, with a down event each,
-- so views learn of a death when it happens without hearing every heartbeat. One caller at
-- a time does the work: the holder of a lease (a string key with a ttl), which it renews on
-- every call; any other caller gets the lease's remaining time. A lease without a ttl (no
-- sweeper set it) is taken over. An expiry entry whose hash still lives (someone re-scored
-- it by hand) is put back at the hash's own expiry.
-- KEYS: expiry sorted set, instances set, capsof hash, lease key
-- ARGV: prefix, owner, lease_ms
-- Returns {1 when this caller holds the lease else 0, instances removed,
--          ms until the next expiry (-1: none) or, for another caller, until the lease ends}.
local function expire(keys, args)
  local prefix, owner, lease_ms = args[1], args[2], tonumber(args[3])
  if not lease_ms or lease_ms < 1 then return redis.error_reply('ERR lease_ms must be positive') end
  local holder, now = read('GET', keys[4]), now_ms()
  if holder and holder ~= owner then
    -- Another's lease holds unless it is longer than any sweeper takes (set by hand) or
    -- its holder is not sweeping (an entry overdue by more than a lease): take it over.
    local left = redis.call('PTTL', keys[4])
    local first = read('ZRANGE', keys[1], 0, 0, 'WITHSCORES') or {}
    local overdue = #first == 2 and (tonumber(first[2]) or now) < now - lease_ms
    if left > 0 and left <= 2 * lease_ms and not overdue then return {0, 0, left} end
  end
  write('SET', keys[4], owner, 'PX', lease_ms)
  local due = read('ZRANGEBYSCORE', keys[1], '-inf', now, 'LIMIT', 0, SWEEP_BUDGET) or {}
  local removed, budget = 0, SWEEP_BUDGET
  local indexes = {instances = keys[2], capsof = keys[3]}
  for _, id in ipairs(due) do
    if budget <= 0 then break end
    budget = budget - 1
    local left = #id <= MAX_ID and redis.call('PTTL', prefix .. 'inst:' .. id) or -2
    if #id > MAX_ID then
      write('ZREM', keys[1], id)
    elseif left >= 0 then  -- the hash lives (0: its last millisecond): look again when it ends
      write('ZADD', keys[1], now + math.max(left, 1), id)
    elseif left == -1 then  -- a hash without expiry (written by hand): look again later
      write('ZADD', keys[1], now + lease_ms, id)
    else
      budget = budget - forget(prefix, id, indexes, true)
      removed = removed + 1
    end
  end
  local first = read('ZRANGE', keys[1], 0, 0, 'WITHSCORES') or {}
  local next_ms = -1
  if #first == 2 then next_ms = math.max(0, (tonumber(first[2]) or now) - now) end
  if budget <= 0 or #due == SWEEP_BUDGET then next_ms = 0 end
  return {1, removed, next_ms}
end

-- Threshold algorithm over the per-capability sorted sets: read each list from the
-- top in batches, score every newly seen instance exactly (mean of its ZSCOREs times its
-- trust, discovery.scoring), and stop once the best score found is at least the best
-- any unseen instance could reach (the mean of the last scores read: trust is at most
-- 1), or after MAX_SEEN instances (sets full of entries without a live instance: the
-- best so far, flagged). With grants, a capability asked for that the instance's agent may
-- not advertise counts as missing from it. Instances trusted less than the floor are skipped, and so are
-- those with an invalid trust field (counted). Ties go to the lower load / capacity. It
-- only reads (ids whose hash expired are skipped; SWEEP prunes them).
-- KEYS: instances set
-- ARGV: prefix, trust floor, cap1, cap2, ... (at most MAX_QUERY)
-- Returns {id or '', score, 1 when the search stopped at MAX_SEEN else 0, invalid trusts}.
local function find_best(keys, args)
  local prefix, floor, n = args[1], tonumber(args[2]), #args - 2
  if n < 1 or n > MAX_QUERY then
    return redis.error_reply('ERR ask for 1 to ' .. MAX_QUERY .. ' capabilities')
  end
  if not floor or floor ~= floor or floor < 0 or floor > 1 then
    return redis.error_reply('ERR the trust floor must be a number in [0, 1]')
  end
  local seen, count, invalid = {}, 0, 0
  local best, best_score, best_load = nil, 0, 0
  local grants = grants_of(prefix)
  local depth, batch, truncated = 0, 16, 0
  while true do
    local threshold, more = 0, false
    for i = 1, n do
      local key = prefix .. 'cap:' .. args[i + 2]
      local items = read('ZREVRANGE', key, depth, depth + batch - 1, 'WITHSCORES') or {}
      if #items == 2 * batch then
        more = true
        threshold = threshold + (tonumber(items[#items]) or 0)
      end
      for j = 1, #items, 2 do
        local id = items[j]
        if not seen[id] and #id <= MAX_ID then
          seen[id] = true
          count = count + 1
          local st = read('HMGET', prefix .. 'inst:' .. id, 'status', 'load', 'capacity', 'trust')
          local grant = grants and grants(agent_of(id))
          local trust = st and trust_of(st[4])
          if st and st[1] == 'available' and not trust then invalid = invalid + 1 end
          if st and st[1] == 'available' and trust and trust >= floor then
            local total = 0
            for k = 1, n do
              -- A capability its agent may not advertise counts as missing.
              local s = (not grants or (grant and grant.caps[args[k + 2]]))
                and read('ZSCORE', prefix .. 'cap:' .. args[k + 2], id)
              if s then total = total + (tonumber(s) or 0) end
            end
            local score = total / n * trust
            local capacity = tonumber(st[3]) or 0
            local load = 0
            if capacity > 0 then load = (tonumber(st[2]) or 0) / capacity end
            if score > best_score or (best and score == best_score and load < best_load) then
              best, best_score, best_load = id, score, load
            end
          end
        end
      end
    end
    if not more or (best and best_score >= threshold / n) then break end
    if count >= MAX_SEEN then
      truncated = 1
      break
    end
    depth = depth + batch
  end
  return {best or '', tostring(best_score), truncated, invalid}
end

-- One page of live instances.
-- KEYS: instances set
-- ARGV: prefix, cursor, count
-- Returns {next cursor ('0': done), id, FIELDS..., id, FIELDS..., ...}.
local function list(keys, args)
  local scan = read('SSCAN', keys[1], args[2], 'COUNT', page(args[3]))
  if not scan then return {'0'} end
  return rows(args[1], scan[2], {scan[1]}, false)
end

-- One page of the available instances with one capability, best proficiency first (with
-- 'busy' as a fourth argument, the busy ones too: what a view loads when it starts following
-- the capability).
-- KEYS: capability sorted set
-- ARGV: prefix, offset, count[, 'busy']
-- Returns {next offset (0: done), id, FIELDS..., ...} (the caller weighs by trust).
local function find_all(keys, args)
  local offset, count = math.max(0, tonumber(args[2]) or 0), page(args[3])
  local ids = read('ZREVRANGE', keys[1], offset, offset + count - 1) or {}
  local next_offset = 0
  if #ids == count then next_offset = offset + count end
  local out = rows(args[1], ids, {next_offset}, args[4] ~= 'busy')
  if args[4] == 'busy' then  -- an offline instance is no candidate, whatever it was
    local kept = {out[1]}
    for i = 2, #out, #FIELDS + 1 do
      if out[i + 2] ~= 'offline' then
        for j = 0, #FIELDS do kept[#kept + 1] = out[i + j] end
      end
    end
    out = kept
  end
  return out
end

-- KEYS: inst hash
-- Returns the instance's FIELDS (see row), or an empty list.
local function get(keys, args)
  return row(keys[1]) or {}
end

-- (Loading runs this part with only the redis table in reach: no pairs, no loops over globals.)
redis.register_function{function_name = '@FN@register', callback = register}
redis.register_function{function_name = '@FN@heartbeat', callback = heartbeat}
redis.register_function{function_name = '@FN@beat', callback = beat}
redis.register_function{function_name = '@FN@deregister', callback = deregister}
redis.register_function{function_name = '@FN@sweep', callback = sweep}
redis.register_function{function_name = '@FN@expire', callback = expire}
redis.register_function{function_name = '@FN@find_best', callback = find_best, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@list', callback = list, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@find_all', callback = find_all, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@get', callback = get, flags = {'no-writes'}}
