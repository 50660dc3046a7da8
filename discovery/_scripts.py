"""Server-side Lua scripts of the registry. Each runs as one round trip.

Key layout (``P`` = ``a2a:{<ns>}:``; the braces make a hash tag, so every key of a
namespace lands on one Redis Cluster slot):

    P inst:<id>     hash: name, status, load, capacity, lastSeen, profile (JSON),
                    caps (JSON id -> proficiency); expires unless heartbeats refresh it
    P instances     set of instance ids ever registered (pruned by sweeps)
    P capindex      set of capability ids ever registered
    P cap:<capId>   sorted set: available instances with that capability, score = proficiency
    P events        pub/sub channel of change events (JSON: e = reg | st | down); scripts
                    name it ``prefix .. 'events'`` (a channel is no key: ACL key
                    rights do not cover it, channel rights do)

Under the ACLs of ``a2a redis-config`` an agent's user may write only its own instance
hashes and the shared indexes (``instances``, ``capindex``, ``cap:*``), and Redis checks
those rights for every key a script touches. So no script writes another instance's
hash: FIND_BEST only reads, SWEEP prunes only index entries of hashes that expired.
A hash may hold anything its agent (or whoever holds its password) wrote, so scripts
decode the stored capabilities defensively and never fail on them.
"""

from __future__ import annotations

__all__ = ["DEREGISTER", "FIND_ALL", "FIND_BEST", "HEARTBEAT", "LIST", "REGISTER", "SWEEP"]

# The stored capabilities (JSON id -> proficiency) as a table, or nil when they are not one.
_DECODE_CAPS = """
local function decode_caps(raw)
  if not raw then return nil end
  local ok, caps = pcall(cjson.decode, raw)
  if ok and type(caps) == 'table' then return caps end
  return nil
end
"""

# Take instance ``id`` out of the capability sets its stored ``raw`` caps name; when
# they do not decode (someone overwrote them), out of every capability set.
_UNINDEX = (
    _DECODE_CAPS
    + """
local function unindex(raw, prefix, id, capindex)
  local caps = decode_caps(raw)
  if caps then
    for cap, _ in pairs(caps) do redis.call('ZREM', prefix .. 'cap:' .. tostring(cap), id) end
  elseif raw then
    for _, cap in ipairs(redis.call('SMEMBERS', capindex)) do
      redis.call('ZREM', prefix .. 'cap:' .. cap, id)
    end
  end
end
"""
)

# Replaces the whole hash (DEL first: fields someone added do not survive a re-registration).
# KEYS: inst hash, instances set, capindex set
# ARGV: prefix, id, ttl_ms, name, status, load, capacity, now_ms, profile_json, caps_json
REGISTER = (
    _UNINDEX
    + """
local key, prefix, id = KEYS[1], ARGV[1], ARGV[2]
unindex(redis.call('HGET', key, 'caps'), prefix, id, KEYS[3])
redis.call('DEL', key)
redis.call('HSET', key, 'name', ARGV[4], 'status', ARGV[5], 'load', ARGV[6], 'capacity', ARGV[7],
           'lastSeen', ARGV[8], 'profile', ARGV[9], 'caps', ARGV[10])
redis.call('PEXPIRE', key, tonumber(ARGV[3]))
redis.call('SADD', KEYS[2], id)
for cap, prof in pairs(cjson.decode(ARGV[10])) do
  redis.call('SADD', KEYS[3], cap)
  if ARGV[5] == 'available' then redis.call('ZADD', prefix .. 'cap:' .. cap, prof, id) end
end
redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'reg', id = id}))
return 1
"""
)

# A heartbeat checks the hash is still what was registered: the name, a known status,
# and the SHA-1 of profile .. caps equal to the fingerprint the registering process
# remembers (an empty fingerprint skips that check). The capability sets are rewritten
# on every beat (ZADD while available, ZREM otherwise), which also undoes any edit of
# this instance's index entries since the last one.
# KEYS: inst hash
# ARGV: prefix, id, ttl_ms, status, load, capacity, now_ms, name, fingerprint
# Returns 0 when the instance is unknown (expired, or the server lost its data) or its
# hash was altered: re-register.
HEARTBEAT = (
    _DECODE_CAPS
    + """
local key, prefix, id, status, fingerprint = KEYS[1], ARGV[1], ARGV[2], ARGV[4], ARGV[9]
local h = redis.call('HMGET', key, 'status', 'name', 'profile', 'caps')
local old = h[1]
if not old then return 0 end
if old ~= 'available' and old ~= 'busy' and old ~= 'offline' then return 0 end
if fingerprint ~= '' then
  if h[2] ~= ARGV[8] or not h[3] or not h[4] then return 0 end
  if redis.sha1hex(h[3] .. h[4]) ~= fingerprint then return 0 end
end
local caps = decode_caps(h[4])
if not caps then return 0 end
redis.call('HSET', key, 'status', status, 'load', ARGV[5], 'capacity', ARGV[6], 'lastSeen', ARGV[7])
redis.call('PEXPIRE', key, tonumber(ARGV[3]))
for cap, prof in pairs(caps) do
  local score = tonumber(prof)
  if status == 'available' and score then
    redis.call('ZADD', prefix .. 'cap:' .. tostring(cap), score, id)
  else
    redis.call('ZREM', prefix .. 'cap:' .. tostring(cap), id)
  end
end
redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'st', id = id, status = status,
  load = tonumber(ARGV[5]), capacity = tonumber(ARGV[6]), ts = tonumber(ARGV[7])}))
return 1
"""
)

# KEYS: inst hash, instances set, capindex set
# ARGV: prefix, id
DEREGISTER = (
    _UNINDEX
    + """
local key, prefix, id = KEYS[1], ARGV[1], ARGV[2]
unindex(redis.call('HGET', key, 'caps'), prefix, id, KEYS[3])
redis.call('DEL', key)
redis.call('SREM', KEYS[2], id)
redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'down', id = id}))
return 1
"""
)

# Threshold algorithm over the per-capability sorted sets: read each list from the
# top in batches, score every newly seen instance exactly (ZSCORE in each list), and
# stop once the best score found is at least the best any unseen instance could
# reach (the mean of the last scores read). Cost grows with how deep the answer
# lies, not with the registry's size. Ties go to the lower load / capacity. It only reads
# (ids whose hash expired are skipped; SWEEP prunes them), so read-only users may run it.
# KEYS: instances set
# ARGV: prefix, cap1, cap2, ...
# Returns {id, score} or nil.
FIND_BEST = """
local prefix = ARGV[1]
local caps = {}
for i = 2, #ARGV do caps[#caps + 1] = ARGV[i] end
local n = #caps
if n == 0 then return nil end
local seen = {}
local best, best_score, best_load = nil, 0, 0
local depth, batch = 0, 16
while true do
  local threshold, more = 0, false
  for i = 1, n do
    local key = prefix .. 'cap:' .. caps[i]
    local items = redis.call('ZREVRANGE', key, depth, depth + batch - 1, 'WITHSCORES')
    if #items == 2 * batch then
      more = true
      threshold = threshold + tonumber(items[#items])
    end
    for j = 1, #items, 2 do
      local id = items[j]
      if not seen[id] then
        seen[id] = true
        local st = redis.call('HMGET', prefix .. 'inst:' .. id, 'status', 'load', 'capacity')
        if st[1] == 'available' then
          local total = 0
          for k = 1, n do
            local s = redis.call('ZSCORE', prefix .. 'cap:' .. caps[k], id)
            if s then total = total + tonumber(s) end
          end
          local score = total / n
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
  depth = depth + batch
end
if not best then return nil end
return {best, tostring(best_score)}
"""

# KEYS: instances set
# ARGV: prefix
# Returns a flat list: id, profile_json, status, load, capacity, lastSeen, ... for live instances.
LIST = """
local prefix = ARGV[1]
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local h = redis.call('HMGET', prefix .. 'inst:' .. id,
                       'profile', 'status', 'load', 'capacity', 'lastSeen')
  if h[1] then
    out[#out + 1] = id
    for i = 1, 5 do out[#out + 1] = h[i] end
  end
end
return out
"""

# Every available instance with one capability, best proficiency first (seed 004's
# findAgentsWithCapability). Only available instances are in a capability's sorted set.
# KEYS: capability sorted set
# ARGV: prefix
# Returns the same flat list as LIST.
FIND_ALL = """
local prefix = ARGV[1]
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do
  local h = redis.call('HMGET', prefix .. 'inst:' .. id,
                       'profile', 'status', 'load', 'capacity', 'lastSeen')
  if h[1] and h[2] == 'available' then
    out[#out + 1] = id
    for i = 1, 5 do out[#out + 1] = h[i] end
  end
end
return out
"""

# KEYS: instances set, capindex set
# ARGV: prefix
# Drops instances whose hash expired from every index; returns how many.
SWEEP = """
local prefix = ARGV[1]
local caps = redis.call('SMEMBERS', KEYS[2])
local removed = 0
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', prefix .. 'inst:' .. id) == 0 then
    for _, cap in ipairs(caps) do redis.call('ZREM', prefix .. 'cap:' .. cap, id) end
    redis.call('SREM', KEYS[1], id)
    redis.call('PUBLISH', prefix .. 'events', cjson.encode({e = 'down', id = id}))
    removed = removed + 1
  end
end
return removed
"""
