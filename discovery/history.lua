
-- Conversation history (a2a.stores.history), in the same library: a batch of captured calls
-- is one FCALL with a few arguments, not six commands per call. KEYS[1] is the namespace's
-- conversation prefix (``P conv:``); conversation <id> is its meta hash (userId, goal,
-- summary, writes: exchanges written so far, summarised: the writes its summary covers)
-- KEYS[1] .. <id> .. ':meta' and its messages list KEYS[1] .. <id> .. ':messages'.

local function batch_of(raw)
  local ok, batch = pcall(cjson.decode, raw)
  if not ok or type(batch) ~= 'table' then return nil end
  return batch
end

local UNREADABLE = '\0'  -- an owner no user id equals: a meta hash of the wrong type

-- The conversation's owner ('' when it has none, UNREADABLE when its meta cannot be read)
-- and whether it has a goal, in one read.
local function owner_of(meta)
  local reply = redis.pcall('HMGET', meta, 'userId', 'goal')
  if failed(reply) then return UNREADABLE, true end
  local owner = reply[1]
  if not owner then return '', reply[2] ~= false end
  if owner == '' then return UNREADABLE, true end  -- claimed by an empty id: nobody's to write
  return owner, reply[2] ~= false
end

-- ARGV: ttl, max messages, and the batch as one JSON array of exchanges, each [conversation
-- id, user ('' for none), goal ('' for none: a conversation's first user request becomes it),
-- request message JSON, answer message JSON]. An exchange for another user than the
-- conversation's owner (or for none, when it has one) is not written, nor one whose
-- conversation's meta cannot be read. Returns the numbers (from 0) of the exchanges
-- written and, for each conversation written, its id, its writes now and its messages
-- now (before trimming).
local function history_append(keys, args)
  local ttl, max, batch = tonumber(args[1]), tonumber(args[2]), batch_of(args[3])
  if not batch then return redis.error_reply('ERR a history batch is a JSON array') end
  local owners, lengths, writes, goals, written = {}, {}, {}, {}, {}
  for n, x in ipairs(batch) do
    local id, user, goal, request, answer = x[1], x[2], x[3], x[4], x[5]
    if type(id) == 'string' and id ~= '' and type(user) == 'string' and type(goal) == 'string'
        and type(request) == 'string' and type(answer) == 'string' then
      local meta = keys[1] .. id .. ':meta'
      local owner = owners[id]
      if owner == nil then
        owner, goals[id] = owner_of(meta)
        owners[id] = owner
      end
      if owner == '' or owner == user then
        lengths[id] = write('RPUSH', keys[1] .. id .. ':messages', request, answer)
        local count = redis.pcall('HINCRBY', meta, 'writes', 1)
        writes[id] = failed(count) and -1 or count  -- -1: a count of another's making, unknown
        if goal ~= '' and not goals[id] then
          redis.call('HSETNX', meta, 'goal', goal)
          goals[id] = true
        end
        written[#written + 1] = n - 1
      end
    end
  end
  local held = {}
  for id, length in pairs(lengths) do
    local messages = keys[1] .. id .. ':messages'
    if length > max then redis.call('LTRIM', messages, -max, -1) end
    redis.call('EXPIRE', messages, ttl)
    redis.call('EXPIRE', keys[1] .. id .. ':meta', ttl)
    held[#held + 1] = {id, writes[id], length}
  end
  return {written, held}
end

-- ARGV: how many of the latest messages, and a JSON array of conversation ids. Per
-- conversation: its goal, its summary (nil when missing or unreadable), its latest
-- messages and its writes.
local function history_inputs(keys, args)
  local window, ids = math.max(1, tonumber(args[1]) or 1), batch_of(args[2])
  if not ids then return redis.error_reply('ERR conversation ids are a JSON array') end
  local out = {}
  for _, id in ipairs(ids) do
    local meta = keys[1] .. tostring(id) .. ':meta'
    out[#out + 1] = {
      read('HGET', meta, 'goal'),
      read('HGET', meta, 'summary'),
      read('LRANGE', keys[1] .. tostring(id) .. ':messages', -window, -1) or {},
      tonumber(read('HGET', meta, 'writes')) or 0,
    }
  end
  return out
end

-- ARGV: ttl, and a JSON array of [conversation id, summary, the writes it covers]. A summary
-- is written only over one of fewer writes: a slow summariser's older summary never
-- replaces a newer one. Returns how many were written.
local function history_summaries(keys, args)
  local ttl, items = tonumber(args[1]), batch_of(args[2])
  if not items then return redis.error_reply('ERR summaries are a JSON array') end
  local n = 0
  for _, x in ipairs(items) do
    if type(x[1]) == 'string' and type(x[2]) == 'string' and type(x[3]) == 'number' then
      local meta = keys[1] .. x[1] .. ':meta'
      if (tonumber(read('HGET', meta, 'summarised')) or -1) < x[3] then
        write('HSET', meta, 'summary', x[2], 'summarised', x[3])
        redis.call('EXPIRE', meta, ttl)
        n = n + 1
      end
    end
  end
  return n
end

redis.register_function{function_name = '@FN@history_append', callback = history_append}
redis.register_function{function_name = '@FN@history_inputs', callback = history_inputs, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@history_summaries', callback = history_summaries}
