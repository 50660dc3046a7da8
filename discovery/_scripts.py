"""Server-side Lua scripts of the registry. Each runs as one round trip.

Key layout (``P`` = ``a2a:{<ns>}:``; the braces make a hash tag, so every key of a
namespace lands on one Redis Cluster slot):

    P inst:<id>     hash: name, status, load, capacity, lastSeen, profile (JSON),
                    caps (JSON id -> proficiency); expires unless heartbeats refresh it
    P instances     set of instance ids ever registered (pruned by sweeps)
    P capindex      set of capability ids ever registered
    P cap:<capId>   sorted set: available instances with that capability, score = proficiency
    P events        pub/sub channel of change events (JSON: e = reg | st | down)
"""

from __future__ import annotations

__all__ = ["DEREGISTER", "FIND_ALL", "FIND_BEST", "HEARTBEAT", "LIST", "REGISTER", "SWEEP"]

# KEYS: inst hash, instances set, capindex set, events channel
# ARGV: prefix, id, ttl_ms, name, status, load, capacity, now_ms, profile_json, caps_json
REGISTER = """
local key, prefix, id = KEYS[1], ARGV[1], ARGV[2]
local old = redis.call('HGET', key, 'caps')
if old then
  for cap, _ in pairs(cjson.decode(old)) do redis.call('ZREM', prefix .. 'cap:' .. cap, id) end
end
redis.call('HSET', key, 'name', ARGV[4], 'status', ARGV[5], 'load', ARGV[6], 'capacity', ARGV[7],
           'lastSeen', ARGV[8], 'profile', ARGV[9], 'caps', ARGV[10])
redis.call('PEXPIRE', key, tonumber(ARGV[3]))
redis.call('SADD', KEYS[2], id)
for cap, prof in pairs(cjson.decode(ARGV[10])) do
  redis.call('SADD', KEYS[3], cap)
  if ARGV[5] == 'available' then redis.call('ZADD', prefix .. 'cap:' .. cap, prof, id) end
end
redis.call('PUBLISH', KEYS[4], cjson.encode({e = 'reg', id = id}))
return 1
"""

# KEYS: inst hash, events channel
# ARGV: prefix, id, ttl_ms, status, load, capacity, now_ms
# Returns 0 when the instance is unknown (expired or the server lost its data): re-register.
HEARTBEAT = """
local key, prefix, id, status = KEYS[1], ARGV[1], ARGV[2], ARGV[4]
local old = redis.call('HGET', key, 'status')
if not old then return 0 end
redis.call('HSET', key, 'status', status, 'load', ARGV[5], 'capacity', ARGV[6], 'lastSeen', ARGV[7])
redis.call('PEXPIRE', key, tonumber(ARGV[3]))
if old ~= status then
  for cap, prof in pairs(cjson.decode(redis.call('HGET', key, 'caps'))) do
    if status == 'available' then
      redis.call('ZADD', prefix .. 'cap:' .. cap, prof, id)
    else
      redis.call('ZREM', prefix .. 'cap:' .. cap, id)
    end
  end
end
redis.call('PUBLISH', KEYS[2], cjson.encode({e = 'st', id = id, status = status,
  load = tonumber(ARGV[5]), capacity = tonumber(ARGV[6]), ts = tonumber(ARGV[7])}))
return 1
"""

# KEYS: inst hash, instances set, events channel
# ARGV: prefix, id
DEREGISTER = """
local key, prefix, id = KEYS[1], ARGV[1], ARGV[2]
local caps = redis.call('HGET', key, 'caps')
if caps then
  for cap, _ in pairs(cjson.decode(caps)) do redis.call('ZREM', prefix .. 'cap:' .. cap, id) end
end
redis.call('DEL', key)
redis.call('SREM', KEYS[2], id)
redis.call('PUBLISH', KEYS[3], cjson.encode({e = 'down', id = id}))
return 1
"""

# Threshold algorithm over the per-capability sorted sets: read each list from the
# top in batches, score every newly seen instance exactly (ZSCORE in each list), and
# stop once the best score found is at least the best any unseen instance could
# reach (the mean of the last scores read). Cost grows with how deep the answer
# lies, not with the registry's size. Ties go to the lower load / capacity.
# KEYS: instances set, events channel
# ARGV: prefix, cap1, cap2, ...
# Returns {id, score} or nil.
FIND_BEST = """
local prefix = ARGV[1]
local caps = {}
for i = 2, #ARGV do caps[#caps + 1] = ARGV[i] end
local n = #caps
if n == 0 then return nil end
local seen, dead = {}, {}
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
        if not st[1] then
          dead[#dead + 1] = id
        elseif st[1] == 'available' then
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
for _, id in ipairs(dead) do
  for k = 1, n do redis.call('ZREM', prefix .. 'cap:' .. caps[k], id) end
  redis.call('SREM', KEYS[1], id)
  redis.call('PUBLISH', KEYS[2], cjson.encode({e = 'down', id = id}))
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

# KEYS: instances set, capindex set, events channel
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
    redis.call('PUBLISH', KEYS[3], cjson.encode({e = 'down', id = id}))
    removed = removed + 1
  end
end
return removed
"""
