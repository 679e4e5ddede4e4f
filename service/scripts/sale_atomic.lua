-- sale_atomic.lua - the whole sale in one script: no lock, nothing can run in between.
-- KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}; a sale with an idempotency
-- key K (then one sale) adds KEYS[4] idem:{I}:K, its first answer, and KEYS[5]
-- idem-item:K, the item K was first used for. ARGV[1] instance name, ARGV[2] sales wanted
-- n, ARGV[3] item, ARGV[4] the key's TTL in ms, ARGV[5..4+n] the sales' request ids.
-- Sells min(n, stock). Returns {sold, stock left}; with a key seen before, its first
-- answer (a string, "STATUS REMAINING TOKEN INSTANCE REQUEST": nothing sold again);
-- errors unknown_item, bad_stock, key_reused ITEM.
local keyed = #KEYS == 5
if keyed then
    local item = redis.call('get', KEYS[5])
    if item and item ~= ARGV[3] then
        return redis.error_reply('key_reused ' .. item)
    end
    local first = redis.call('get', KEYS[4])
    if first then
        return first
    end
end
local s = redis.call('get', KEYS[1])
if not s then
    return redis.error_reply('unknown_item')
end
if not string.match(s, '^-?%d+$') then
    return redis.error_reply('bad_stock')
end
local n = tonumber(s)
local k = math.max(math.min(tonumber(ARGV[2]), n), 0)
if k > 0 then
    redis.call('set', KEYS[1], n - k)
    redis.call('incrby', KEYS[2], k)
end
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[1], 'remaining', n - i, 'token', 0,
               'request', ARGV[4 + i])
end
if keyed then
    local answer = k > 0 and ('200 ' .. (n - 1)) or '409 0'
    redis.call('set', KEYS[5], ARGV[3], 'px', ARGV[4])
    redis.call('set', KEYS[4], answer .. ' 0 ' .. ARGV[1] .. ' ' .. ARGV[5], 'px', ARGV[4])
end
return {k, n - k}
