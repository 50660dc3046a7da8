"""The registry's server-side code: one Redis FUNCTION library (Redis 7+, valkey), one call per operation.

Key layout (``P`` = ``a2a:{<ns>}:``; the braces make a hash tag, so every key of a
namespace lands on one Redis Cluster slot):

    P inst:<id>     hash: name, status, load, capacity, lastSeen, profile (JSON),
                    caps (JSON id -> proficiency), trust (only an instance that publishes
                    one: a decimal in [0, 1]); expires unless heartbeats refresh it
    P instances     set of instance ids registered and not yet swept
    P capsof        hash: instance id -> the caps JSON it registered; outlives the
                    instance hash, so a sweep knows which sorted sets to prune
    P cap:<capId>   sorted set: available instances with that capability, score = proficiency
    P events        pub/sub channel of change events (JSON: e = reg | st | down); functions
                    name it ``prefix .. 'events'`` (a channel is no key: ACL key
                    rights do not cover it, channel rights do)

The library is loaded by a privileged user (``a2a redis-config --load``, or any runtime
whose user may, such as the default user of an open deployment); agents and clients may
only call it (FCALL / FCALL_RO), never load code of their own, so nothing they send can
keep Redis busy. Its name carries a version: a layout change ships as a new library
beside the old one (v2 added the trust field, and FIND_BEST weighs by it; v1 runtimes
sharing a namespace ignore it).

Every function's work is bounded per call, whatever the shared keys hold (every agent
may write ``instances``, ``capsof`` and ``cap:*``, and any bytes into its own hashes):
sets are read a page at a time (SSCAN / ZREVRANGE with a cursor or offset the caller
keeps), FIND_BEST stops after ``MAX_SEEN`` instances, SWEEP after ``SWEEP_BUDGET`` index
removals, JSON over ``MAX_BYTES`` is never decoded and entries over the size bounds are
answered by their size, not their bytes. A shared key of the wrong type reads as empty
and is replaced on write, so no agent can make the functions fail for everyone.

Under the ACLs of ``a2a redis-config`` Redis checks the caller's rights for every key a
function touches, so no function writes another agent's instance hash: the reads run as
FCALL_RO (``no-writes``), SWEEP prunes only index entries of hashes that expired.
"""

from __future__ import annotations

from .limits import MAX_CAPABILITIES, MAX_FIELD_BYTES, MAX_PROFILE_BYTES

__all__ = ["FUNCTIONS", "LIBRARY", "MAX_PAGE", "MAX_QUERY", "SOURCE"]

LIBRARY = "a2a_registry_v2"
_FN = "a2a_v2_"
FUNCTIONS = {
    op: _FN + op
    for op in ("register", "heartbeat", "deregister", "sweep", "find_best", "list", "find_all", "get")
}
"""Operation -> function name (function names are global on a server: versioned too)."""
MAX_PAGE = 256
"""Ids one LIST, FIND_ALL or SWEEP call reads at most."""
MAX_QUERY = 16
"""Capabilities one FIND_BEST may ask for."""

_LIBRARY = r"""#!lua name=@LIBRARY@

local MAX_BYTES = @MAX_BYTES@   -- profile and caps JSON
local MAX_FIELD = @MAX_FIELD@   -- status, load, capacity, lastSeen, trust
local MAX_CAPS = @MAX_CAPS@
local MAX_QUERY = @MAX_QUERY@
local MAX_PAGE = @MAX_PAGE@
local MAX_ID = 128              -- a longer member of a shared set is no instance id
local MAX_SEEN = 1024           -- instances one FIND_BEST scores at most
local SWEEP_BUDGET = 1024       -- index removals one SWEEP makes at most
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
  return read('HMGET', key, unpack(FIELDS)) or nil
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
-- KEYS: inst hash, instances set, capsof hash
-- ARGV: prefix, id, ttl_ms, name, status, load, capacity, now_ms, profile_json, caps_json,
--       trust ('' when the instance publishes none)
local function register(keys, args)
  local key, prefix, id, status, trust = keys[1], args[1], args[2], args[5], args[11] or ''
  local caps = decode_caps(args[10])
  if not caps or #args[9] > MAX_BYTES then
    return redis.error_reply('ERR profile or capabilities over the registry size bounds')
  end
  if trust ~= '' and not trust_of(trust) then return redis.error_reply('ERR invalid trust') end
  unindex(prefix, id, key, keys[3])
  redis.call('DEL', key)
  redis.call('HSET', key, 'name', args[4], 'status', status, 'load', args[6], 'capacity', args[7],
             'lastSeen', args[8], 'profile', args[9], 'caps', args[10])
  if trust ~= '' then redis.call('HSET', key, 'trust', trust) end
  redis.call('PEXPIRE', key, tonumber(args[3]))
  write('SADD', keys[2], id)
  write('HSET', keys[3], id, args[10])
  if status == 'available' then
    for cap, prof in pairs(caps) do write('ZADD', prefix .. 'cap:' .. cap, prof, id) end
  end
  redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'reg', id = id}))
  return 1
end

-- A heartbeat checks the hash is still what was registered: the name, a known status,
-- and the SHA-1 of profile .. caps equal to the fingerprint the registering process
-- remembers (an empty fingerprint skips that check). The capability sets are rewritten
-- on every beat (ZADD while available, ZREM otherwise), which also undoes any edit of
-- this instance's index entries since the last one.
-- The trust field is written (or removed, for '') like load, and travels in the event.
-- KEYS: inst hash
-- ARGV: prefix, id, ttl_ms, status, load, capacity, now_ms, name, fingerprint, trust
-- Returns 0 when the instance is unknown (expired, or the server lost its data) or its
-- hash was altered (over the size bounds included): re-register.
local function heartbeat(keys, args)
  local key, prefix, id, status, fingerprint = keys[1], args[1], args[2], args[4], args[9]
  local trust = args[10] or ''
  if trust ~= '' and not trust_of(trust) then return redis.error_reply('ERR invalid trust') end
  local profile, raw = small(key, 'profile'), small(key, 'caps')
  if not profile or not raw then return 0 end
  local h = read('HMGET', key, 'status', 'name')
  if not h then return 0 end
  local old = h[1]
  if old ~= 'available' and old ~= 'busy' and old ~= 'offline' then return 0 end
  if fingerprint ~= '' then
    if h[2] ~= args[8] or redis.sha1hex(profile .. raw) ~= fingerprint then return 0 end
  end
  local caps = decode_caps(raw)
  if not caps then return 0 end
  redis.call('HSET', key, 'status', status, 'load', args[5], 'capacity', args[6], 'lastSeen', args[7])
  if trust == '' then redis.call('HDEL', key, 'trust') else redis.call('HSET', key, 'trust', trust) end
  redis.call('PEXPIRE', key, tonumber(args[3]))
  for cap, prof in pairs(caps) do
    local score = tonumber(prof)
    if status == 'available' and score then
      write('ZADD', prefix .. 'cap:' .. tostring(cap), score, id)
    else
      write('ZREM', prefix .. 'cap:' .. tostring(cap), id)
    end
  end
  redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'st', id = id, status = status,
    load = tonumber(args[5]), capacity = tonumber(args[6]), ts = tonumber(args[7]),
    trust = tonumber(trust)}))
  return 1
end

-- KEYS: inst hash, instances set, capsof hash
-- ARGV: prefix, id
local function deregister(keys, args)
  local key, prefix, id = keys[1], args[1], args[2]
  unindex(prefix, id, key, keys[3])
  redis.call('DEL', key)
  write('SREM', keys[2], id)
  write('HDEL', keys[3], id)
  redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'down', id = id}))
  return 1
end

-- One page of a pass over the instances set: ids whose hash expired leave the indexes
-- (the capability sets their capsof record names, with a down event; an id without
-- a record never registered here, or did so under an older layout: its entries stay
-- behind and readers skip them).
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
      local record = small(keys[2], id)
      for cap in pairs(decode_caps(record) or {}) do
        write('ZREM', prefix .. 'cap:' .. tostring(cap), id)
        budget = budget - 1
      end
      write('HDEL', keys[2], id)
      write('SREM', keys[1], id)
      -- Only an id that registered has a record: a padded set costs views no events.
      if record then redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'down', id = id})) end
      removed = removed + 1
    end
  end
  return {scan[1], removed}
end

-- Threshold algorithm over the per-capability sorted sets: read each list from the
-- top in batches, score every newly seen instance exactly (mean of its ZSCOREs times its
-- trust, discovery.scoring), and stop once the best score found is at least the best
-- any unseen instance could reach (the mean of the last scores read: trust is at most
-- 1), or after MAX_SEEN instances (sets full of entries without a live instance: the
-- best so far, flagged). Instances trusted less than the floor are skipped, and so are
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
          local trust = st and trust_of(st[4])
          if st and st[1] == 'available' and not trust then invalid = invalid + 1 end
          if st and st[1] == 'available' and trust and trust >= floor then
            local total = 0
            for k = 1, n do
              local s = read('ZSCORE', prefix .. 'cap:' .. args[k + 2], id)
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

-- One page of the available instances with one capability, best proficiency first.
-- KEYS: capability sorted set
-- ARGV: prefix, offset, count
-- Returns {next offset (0: done), id, FIELDS..., ...} (the caller weighs by trust).
local function find_all(keys, args)
  local offset, count = math.max(0, tonumber(args[2]) or 0), page(args[3])
  local ids = read('ZREVRANGE', keys[1], offset, offset + count - 1) or {}
  local next_offset = 0
  if #ids == count then next_offset = offset + count end
  return rows(args[1], ids, {next_offset}, true)
end

-- KEYS: inst hash
-- Returns the instance's FIELDS (see row), or an empty list.
local function get(keys, args)
  return row(keys[1]) or {}
end

-- (Loading runs this part with only the redis table in reach: no pairs, no loops over globals.)
redis.register_function{function_name = '@FN@register', callback = register}
redis.register_function{function_name = '@FN@heartbeat', callback = heartbeat}
redis.register_function{function_name = '@FN@deregister', callback = deregister}
redis.register_function{function_name = '@FN@sweep', callback = sweep}
redis.register_function{function_name = '@FN@find_best', callback = find_best, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@list', callback = list, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@find_all', callback = find_all, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@get', callback = get, flags = {'no-writes'}}
"""

SOURCE = (
    _LIBRARY.replace("@LIBRARY@", LIBRARY)
    .replace("@FN@", _FN)
    .replace("@MAX_BYTES@", str(MAX_PROFILE_BYTES))
    .replace("@MAX_FIELD@", str(MAX_FIELD_BYTES))
    .replace("@MAX_CAPS@", str(MAX_CAPABILITIES))
    .replace("@MAX_QUERY@", str(MAX_QUERY))
    .replace("@MAX_PAGE@", str(MAX_PAGE))
)
"""The library's Lua source, as FUNCTION LOAD takes it."""
