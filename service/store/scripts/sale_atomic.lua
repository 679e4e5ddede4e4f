-- sale_atomic.lua - the whole sale in one script: no lock, nothing can run in between.
-- Sells min(n, stock) of n sales wanted. Returns {sold, stock left}; with a key seen
-- before, its first answer (a string, "STATUS REMAINING TOKEN INSTANCE REQUEST": nothing
-- sold again); errors unknown_item, bad_stock (an error's first word is its code: the
-- service reads only that).
-- KEYS and ARGV by name (the C side reads these two lines too, build/script_args.h); a
-- sale with an idempotency key (then one sale) passes the last key.
local KEY = {stock = 1, sold = 2, orders = 3, record = 4}
local ARG = {instance = 1, count = 2, idem_ttl = 3, requests = 4}
-- include: idempotency.lua
local keyed = #KEYS == KEY.record
if keyed then
    local early = idem_seen(KEYS[KEY.record])
    if early then
        return early
    end
end
local s = redis.call('get', KEYS[KEY.stock])
if not s then
    return redis.error_reply('unknown_item no stock key')
end
if not string.match(s, '^-?%d+$') then
    return redis.error_reply('bad_stock the stock is not an integer')
end
local n = tonumber(s)
local k = math.max(math.min(tonumber(ARGV[ARG.count]), n), 0)
if k > 0 then
    redis.call('set', KEYS[KEY.stock], n - k)
    redis.call('incrby', KEYS[KEY.sold], k)
end
for i = 1, k do
    redis.call('xadd', KEYS[KEY.orders], '*', 'instance', ARGV[ARG.instance], 'remaining', n - i,
               'token', 0, 'request', ARGV[ARG.requests + i - 1])
end
if keyed then
    local answer = k > 0 and ('200 ' .. (n - 1)) or '409 0'
    idem_keep(KEYS[KEY.record], ARGV[ARG.idem_ttl],
              answer .. ' 0 ' .. ARGV[ARG.instance] .. ' ' .. ARGV[ARG.requests])
end
return {k, n - k}
