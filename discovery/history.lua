
-- Conversation history (a2a.stores.history), in the same library: a batch of captured calls
-- is one FCALL with a few arguments, not six commands per call. KEYS[1] is the namespace's
-- conversation prefix (``P conv:``); conversation <id> is its meta hash (userId, goal,
-- summary) KEYS[1] .. <id> .. ':meta' and its messages list KEYS[1] .. <id> .. ':messages'.

local function batch_of(raw)
  local ok, batch = pcall(cjson.decode, raw)
  if not ok or type(batch) ~= 'table' then return nil end
  return batch
end

-- ARGV: ttl, max messages, and the batch as one JSON array of exchanges, each [conversation
-- id, user ('' for none), goal ('' for none: a conversation's first user request becomes it),
-- request message JSON, answer message JSON]. An exchange for another user than the
-- conversation's owner (or for none, when it has one) is not written. Returns the numbers
-- (from 0) of the exchanges written and, for each conversation written, its id and how many
-- messages it holds now.
local function history_append(keys, args)
  local ttl, max, batch = tonumber(args[1]), tonumber(args[2]), batch_of(args[3])
  if not batch then return redis.error_reply('ERR a history batch is a JSON array') end
  local owners, lengths, goals, written = {}, {}, {}, {}
  for n, x in ipairs(batch) do
    local id, user, goal, request, answer = x[1], x[2], x[3], x[4], x[5]
    if type(id) == 'string' and id ~= '' and type(user) == 'string' and type(goal) == 'string'
        and type(request) == 'string' and type(answer) == 'string' then
      local meta = keys[1] .. id .. ':meta'
      local owner = owners[id]
      if owner == nil then
        owner = read('HGET', meta, 'userId') or ''
        owners[id] = owner
      end
      if owner == '' or owner == user then
        lengths[id] = write('RPUSH', keys[1] .. id .. ':messages', request, answer)
        if goal ~= '' and not goals[id] then
          write('HSETNX', meta, 'goal', goal)
          goals[id] = true
        end
        written[#written + 1] = n - 1
      end
    end
  end
  local held = {}
  for id, length in pairs(lengths) do
    local messages = keys[1] .. id .. ':messages'
    redis.call('LTRIM', messages, -max, -1)
    redis.call('EXPIRE', messages, ttl)
    if goals[id] then redis.call('EXPIRE', keys[1] .. id .. ':meta', ttl) end
    held[#held + 1] = id
    held[#held + 1] = length
  end
  return {written, held}
end

-- ARGV: how many of the latest messages, and a JSON array of conversation ids. Per
-- conversation: its goal, its summary (nil when missing or unreadable) and its latest messages.
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
    }
  end
  return out
end

-- ARGV: ttl, and a JSON array of [conversation id, summary].
local function history_summaries(keys, args)
  local ttl, pairs_ = tonumber(args[1]), batch_of(args[2])
  if not pairs_ then return redis.error_reply('ERR summaries are a JSON array') end
  for _, x in ipairs(pairs_) do
    if type(x[1]) == 'string' and type(x[2]) == 'string' then
      local meta = keys[1] .. x[1] .. ':meta'
      write('HSET', meta, 'summary', x[2])
      redis.call('EXPIRE', meta, ttl)
    end
  end
  return #pairs_
end

redis.register_function{function_name = '@FN@history_append', callback = history_append}
redis.register_function{function_name = '@FN@history_inputs', callback = history_inputs, flags = {'no-writes'}}
redis.register_function{function_name = '@FN@history_summaries', callback = history_summaries}
