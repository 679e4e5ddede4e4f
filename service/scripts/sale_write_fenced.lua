-- sale_write_fenced.lua - the sale's writes under a fenced grant: refused unless the
-- grant's token, with the batch's number within the grant, is strictly greater than the
-- last writer's, and the token is not older than the last one issued (Kleppmann's
-- fencing, checked where the stock is written).
-- KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}, KEYS[4] written:{I} (a hash:
-- token and batch of the last write), KEYS[5] fence:{I} (the last token issued); a sale
-- with an idempotency key K (then one sale) adds KEYS[6] idem:{I}:K and KEYS[7]
-- idem-item:K (see sale_atomic.lua). ARGV[1] stock read under the lock, ARGV[2] sales k,
-- ARGV[3] instance, ARGV[4] owner, ARGV[5] token, ARGV[6] batch (1, 2, ... in the
-- grant), ARGV[7] item, ARGV[8] the key's TTL in ms, ARGV[9..8+k] the sales' request ids
-- (with a key, ARGV[9] even when k is 0).
-- Writes stock - k, sold + k, k entries and the new last writer. Returns k; with a key
-- seen before, its first answer (a string: nothing written); errors lease_lost (nothing
-- written), key_reused ITEM.
-- Why the last token issued: a holder paused after its lease check writes after the next
-- holder was granted and read the stock, but before that one wrote; against the last
-- writer alone its token would pass, and the next holder's write, on its stale read, too.
local keyed = #KEYS == 7
if keyed then
    local item = redis.call('get', KEYS[7])
    if item and item ~= ARGV[7] then
        return redis.error_reply('key_reused ' .. item)
    end
    local first = redis.call('get', KEYS[6])
    if first then
        return first
    end
end
local last = redis.call('hmget', KEYS[4], 'token', 'batch')
local last_token, last_batch = tonumber(last[1]) or 0, tonumber(last[2]) or 0
local issued = tonumber(redis.call('get', KEYS[5])) or 0
local token, batch = tonumber(ARGV[5]), tonumber(ARGV[6])
if token < issued or token < last_token or (token == last_token and batch <= last_batch) then
    return redis.error_reply('lease_lost')
end
local stock = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
redis.call('hset', KEYS[4], 'token', token, 'batch', batch)
if k > 0 then
    redis.call('set', KEYS[1], stock - k)
    redis.call('incrby', KEYS[2], k)
end
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[3], 'remaining', stock - i,
               'token', ARGV[5], 'owner', ARGV[4], 'request', ARGV[8 + i])
end
if keyed then
    local answer = k > 0 and ('200 ' .. (stock - 1)) or '409 0'
    redis.call('set', KEYS[7], ARGV[7], 'px', ARGV[8])
    redis.call('set', KEYS[6], answer .. ' ' .. ARGV[5] .. ' ' .. ARGV[3] .. ' ' .. ARGV[9],
               'px', ARGV[8])
end
return k
