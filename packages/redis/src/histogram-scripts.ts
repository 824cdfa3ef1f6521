import { luaScript } from './link.js';

/**
 * Publishes one instance's histograms: each key set with its expiry, listed in the index (scored
 * by Redis time), the index trimmed of keys older than the expiry.
 * ARGV: index key, expiry ms, then pairs of key and value.
 */
export const PUBLISH_SCRIPT = luaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
for i = 3, #ARGV, 2 do
  redis.call('SET', ARGV[i], ARGV[i + 1], 'PX', ttl)
  redis.call('ZADD', ARGV[1], now, ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', ARGV[1], '-inf', now - ttl)
redis.call('PEXPIRE', ARGV[1], ttl)
return #ARGV / 2 - 1
`);

/** Most histogram keys a warm start reads: the newest (a fleet of 100 instances × 20 routes). */
export const MAX_READ_KEYS = 2_000;

/**
 * Reads the fleet's recent histograms: the values of the newest keys in the index, at most
 * ARGV[3] of them, by MGETs of 500 keys (Lua's `unpack` fails at about 8,000 values).
 * ARGV: index key, max age ms, most keys.
 */
export const READ_SCRIPT = luaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keys = redis.call('ZREVRANGEBYSCORE', ARGV[1], '+inf', now - tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i = 1, #keys, 500 do
  local values = redis.call('MGET', unpack(keys, i, math.min(i + 499, #keys)))
  for j = 1, #values do out[#out + 1] = values[j] end
end
return out
`);
