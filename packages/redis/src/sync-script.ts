import { luaScript } from './link.js';

/**
 * One sync of an instance with the fleet, atomic in Redis (one round trip). Redis's clock picks
 * the slice, so instances need not agree on time. The script:
 * 1. gives back the instance's previous lease (in the slice it was taken from, if still counted);
 * 2. adds the instance's calls, deposits, hedges and penalties since its last sync to the current slice;
 * 3. marks the instance seen and drops instances not seen for a ttl;
 * 4. sums the window (the last `slices` slices): the fleet's balance is
 *    reserve (minPerSecond × ttl) + deposits − hedges and leases − penalties;
 * 5. leases this instance its share of the balance (its calls ÷ the fleet's calls in the window,
 *    or 1 ÷ instances before any call), counted at once as spent so no other instance can lease it.
 *
 * Before all that, the instance's settings (ARGV[11], see {@link settingsFingerprint}) are
 * checked against the fleet's (`<base>:s`, kept for a ttl by every sync that matches them): an
 * instance whose settings differ changes nothing and gets back `{'settings', the fleet's, instances}`.
 *
 * Syncs are numbered per instance; `<base>:q:<instance>` keeps the last that ran. Deltas come in
 * parts, each under the number of the sync that first sent it: a part resent after a sync was
 * given up is added only if that sync never ran (a stalled Redis may run it late), and the
 * previous lease is given back only if the sync that took it is the last that ran.
 *
 * ARGV: base key, instance, slice ms, slices, reserve, previous lease slice, previous lease, the
 * sync that took it, this instance's calls in the window, '1' to take a lease ('0' when
 * closing), settings, then per part: sync number, deposits, calls, hedges, penalties (this
 * sync's own part first).
 * Returns: deposits, calls, hedges sent, penalties, instances, the lease and its slice.
 */
export const SYNC_SCRIPT = luaScript(`
local base = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sliceMs = tonumber(ARGV[3])
local slices = tonumber(ARGV[4])
local ttl = sliceMs * slices
local sk = base .. ':s'
local fleet = redis.call('GET', sk)
if fleet and fleet ~= ARGV[11] then
  return {'settings', fleet, redis.call('ZCARD', base .. ':i')}
end
redis.call('SET', sk, ARGV[11], 'PX', ttl)
local cur = math.floor(now / sliceMs)
local qk = base .. ':q:' .. ARGV[2]
local last = tonumber(redis.call('GET', qk) or 0)
redis.call('SET', qk, ARGV[12], 'PX', ttl)
local leaseSlice = tonumber(ARGV[6])
local lease = tonumber(ARGV[7])
if lease > 0 and leaseSlice > cur - slices and last == tonumber(ARGV[8]) then
  local lk = base .. ':w:' .. leaseSlice
  if redis.call('EXISTS', lk) == 1 then redis.call('HINCRBY', lk, 'h', -lease) end
end
local dd, dc, dh, dp = 0, 0, 0, 0
for i = 12, #ARGV, 5 do
  if tonumber(ARGV[i]) > last then
    dd = dd + tonumber(ARGV[i + 1])
    dc = dc + tonumber(ARGV[i + 2])
    dh = dh + tonumber(ARGV[i + 3])
    dp = dp + tonumber(ARGV[i + 4])
  end
end
local key = base .. ':w:' .. cur
redis.call('HINCRBY', key, 'd', dd)
redis.call('HINCRBY', key, 'c', dc)
redis.call('HINCRBY', key, 'h', dh)
redis.call('HINCRBY', key, 'x', dh)
redis.call('HINCRBY', key, 'p', dp)
redis.call('PEXPIRE', key, ttl + 2 * sliceMs)
local ik = base .. ':i'
redis.call('ZADD', ik, now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', ik, '-inf', now - ttl)
redis.call('PEXPIRE', ik, ttl)
local n = redis.call('ZCARD', ik)
local d, c, h, x, p = 0, 0, 0, 0, 0
for s = cur - slices + 1, cur do
  local v = redis.call('HMGET', base .. ':w:' .. s, 'd', 'c', 'h', 'x', 'p')
  d = d + (tonumber(v[1]) or 0)
  c = c + (tonumber(v[2]) or 0)
  h = h + (tonumber(v[3]) or 0)
  x = x + (tonumber(v[4]) or 0)
  p = p + (tonumber(v[5]) or 0)
end
local balance = tonumber(ARGV[5]) + d - h - p
local share = 1 / n
if c > 0 then share = math.min(1, tonumber(ARGV[9]) / c) end
local grant = 0
if balance > 0 and ARGV[10] == '1' then grant = math.floor(balance * share) end
if grant > 0 then redis.call('HINCRBY', key, 'h', grant) end
return {d, c, x, p, n, grant, cur}
`);

/** What a sync sends: amounts in millionths (of a token, or of a call's cost). */
export interface SyncDeltas {
  deposits: number;
  calls: number;
  hedges: number;
  penalties: number;
}

/** What a sync returns: the fleet's window and this instance's new lease (millionths). */
export interface FleetView {
  deposits: number;
  calls: number;
  hedges: number;
  penalties: number;
  instances: number;
  lease: number;
  leaseSlice: number;
}

/** The settings every instance of a fleet must share, as the sync script compares them. */
export interface SharedSettings {
  ttlMs: number;
  ratio: number;
  minPerSecond: number;
}

const SHARED: readonly (keyof SharedSettings)[] = ['ttlMs', 'ratio', 'minPerSecond'];

/** The settings as stored in Redis: `ttlMs=10000 ratio=0.05 minPerSecond=10`. */
export function settingsFingerprint(s: SharedSettings): string {
  return SHARED.map((k) => `${k}=${s[k]}`).join(' ');
}

/** A sync refused because this instance's settings differ from the fleet's. */
export class SettingsMismatch extends Error {
  readonly code = 'TAILCUT_FLEET_SETTINGS';
  constructor(
    message: string,
    /** Instances sharing the fleet's settings. */
    readonly instances: number,
  ) {
    super(message);
  }
}

/** Names each setting that differs: `ttlMs 5000 here, 10000 in the fleet`. */
function differences(mine: string, fleet: string): string {
  const theirs = new Map(fleet.split(' ').map((kv) => kv.split('=') as [string, string]));
  return mine
    .split(' ')
    .map((kv) => kv.split('=') as [string, string])
    .filter(([k, v]) => theirs.get(k) !== v)
    .map(([k, v]) => `${k} ${v} here, ${theirs.get(k) ?? 'unset'} in the fleet`)
    .join(', ');
}

/**
 * Reads the script's reply; throws {@link SettingsMismatch} when the fleet's settings differ from
 * `mine` (this instance's fingerprint).
 */
export function parseView(reply: unknown, mine: string): FleetView {
  if (Array.isArray(reply) && reply[0] === 'settings') {
    throw new SettingsMismatch(
      `settings differ from the fleet's (${differences(mine, String(reply[1]))})`,
      Number(reply[2]),
    );
  }
  if (!Array.isArray(reply) || reply.length !== 7) {
    throw new Error(`unexpected reply from the sync script: ${String(reply)}`);
  }
  const [deposits, calls, hedges, penalties, instances, lease, leaseSlice] = reply.map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { deposits, calls, hedges, penalties, instances, lease, leaseSlice };
}
