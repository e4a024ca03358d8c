--[[
  definitions-changes: what a replica holding version ARGV[1] of the published definitions must read to hold the
  current ones (runner/engine/definitions.ts): the names changed since, with their definitions (absent:
  withdrawn), from the change log that publish-definitions.lua keeps. One script, so that the version, the log
  and the definitions are read at one instant.

  KEYS[1] definitions (HASH schedule → JSON)
  KEYS[2] version (counter)
  KEYS[3] change log (ZSET name → version)
  KEYS[4] change log's state (HASH: floor, logged)
  ARGV[1] the version the reader holds
  ARGV[2] the most names to return (a page)
  Returns: {'full', version} when the log cannot bring the reader up to date (it was trimmed past the reader's
  version, or the latest write was not logged): read everything; else {'changes', upTo, name1, json1|false, …}
  where upTo is the version the reader holds after applying them (the current version when this page is the
  last; the reader asks again from upTo otherwise).
]]
local since = tonumber(ARGV[1])
local version = tonumber(redis.call('GET', KEYS[2]) or '0')
local state = redis.call('HMGET', KEYS[4], 'floor', 'logged')
local floor, logged = tonumber(state[1] or '0'), tonumber(state[2] or '0')
if since < floor or logged ~= version or since > version then return { 'full', tostring(version) } end
local page = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = { 'changes', tostring(version) }
if #page == 0 then return out end
local names = {}
for i = 1, #page, 2 do names[#names + 1] = page[i] end
local defs = redis.call('HMGET', KEYS[1], unpack(names))
for i, name in ipairs(names) do
  out[#out + 1] = name
  out[#out + 1] = defs[i]
end
if #names == tonumber(ARGV[2]) then out[2] = page[#page] end
return out
