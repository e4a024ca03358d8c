--[[
  The Redis server's clock, read once per script: every decision of cronflock's scripts is taken on it (promise 5
  of docs/design.md), so that replicas on skewed hosts agree. Defines:
    rcall  redis.call
    now    TIME in ms (UTC)
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
