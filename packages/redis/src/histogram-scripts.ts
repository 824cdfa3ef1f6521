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

/** Reads the fleet's recent histograms: the values of the keys in the index (ARGV: index key, max age ms). */
export const READ_SCRIPT = luaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keys = redis.call('ZRANGEBYSCORE', ARGV[1], now - tonumber(ARGV[2]), '+inf')
if #keys == 0 then return {} end
return redis.call('MGET', unpack(keys))
`);
