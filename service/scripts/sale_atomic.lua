-- sale_atomic.lua - the whole sale in one script: no lock, nothing can run in between.
-- KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}; ARGV[1] instance name,
-- ARGV[2] sales wanted k (a combined batch; 1 when absent).
-- Sells min(k, stock). Returns {sold, stock left}; errors unknown_item, bad_stock.
local s = redis.call('get', KEYS[1])
if not s then
    return redis.error_reply('unknown_item')
end
if not string.match(s, '^-?%d+$') then
    return redis.error_reply('bad_stock')
end
local n = tonumber(s)
local k = math.min(tonumber(ARGV[2] or '1'), n)
if k <= 0 then
    return {0, n}
end
redis.call('set', KEYS[1], n - k)
redis.call('incrby', KEYS[2], k)
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[1], 'remaining', n - i, 'token', 0)
end
return {k, n - k}
