-- sale_atomic.lua - the whole sale in one script: no lock, nothing can run in between.
-- KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}; ARGV[1] instance name.
-- Returns the stock left after the sale, -1 when sold out; errors unknown_item, bad_stock.
local s = redis.call('get', KEYS[1])
if not s then
    return redis.error_reply('unknown_item')
end
if not string.match(s, '^-?%d+$') then
    return redis.error_reply('bad_stock')
end
local n = tonumber(s)
if n <= 0 then
    return -1
end
redis.call('set', KEYS[1], n - 1)
redis.call('incr', KEYS[2])
redis.call('xadd', KEYS[3], '*', 'instance', ARGV[1], 'remaining', n - 1, 'token', 0)
return n - 1
