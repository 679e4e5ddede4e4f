-- sale_write.lua - the sale's writes under the lock: stock, sold and one ledger entry per
-- sale, all or nothing. KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}; a sale
-- with an idempotency key K (then one sale) adds KEYS[4] idem:{I}:K and KEYS[5]
-- idem-item:K (see sale_atomic.lua). ARGV[1] stock read under the lock, ARGV[2] sales k,
-- ARGV[3] instance, ARGV[4] owner, ARGV[5] token, ARGV[6] item, ARGV[7] the key's TTL in
-- ms, ARGV[8..7+k] the sales' request ids (with a key, ARGV[8] even when k is 0).
-- Writes stock - k, sold + k, k entries. Returns k; with a key seen before, its first
-- answer (a string: nothing written); error key_reused ITEM.
local keyed = #KEYS == 5
if keyed then
    local item = redis.call('get', KEYS[5])
    if item and item ~= ARGV[6] then
        return redis.error_reply('key_reused ' .. item)
    end
    local first = redis.call('get', KEYS[4])
    if first then
        return first
    end
end
local stock = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
if k > 0 then
    redis.call('set', KEYS[1], stock - k)
    redis.call('incrby', KEYS[2], k)
end
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[3], 'remaining', stock - i,
               'token', ARGV[5], 'owner', ARGV[4], 'request', ARGV[7 + i])
end
if keyed then
    local answer = k > 0 and ('200 ' .. (stock - 1)) or '409 0'
    redis.call('set', KEYS[5], ARGV[6], 'px', ARGV[7])
    redis.call('set', KEYS[4], answer .. ' ' .. ARGV[5] .. ' ' .. ARGV[3] .. ' ' .. ARGV[8],
               'px', ARGV[7])
end
return k
