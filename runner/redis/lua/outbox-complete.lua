--[[
  outbox-complete: when every delivery of an entry is done, acknowledge and delete the entry and its state (the
  stream only ever holds entries not yet delivered: nothing undelivered is trimmed).

  KEYS[1] the stream
  KEYS[2] delivery state (HASH of the entry)
  ARGV[1] the consumer group
  ARGV[2] the entry id
  ARGV[3..] the entry's delivery fields (`<event>/<channel>`)
  Returns: 1 completed; 0 some delivery is not done.
]]
-- @include "includes/outbox-delivery.lua"

for i = 3, #ARGV do
  local kind = parseState(rcall('HGET', KEYS[2], ARGV[i]))
  if not kind or not isDone(kind) then return 0 end
end
rcall('XACK', KEYS[1], ARGV[1], ARGV[2])
rcall('XDEL', KEYS[1], ARGV[2])
rcall('DEL', KEYS[2])
return 1
