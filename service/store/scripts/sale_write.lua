-- sale_write.lua - the sale's writes under the lock: stock, sold and one ledger entry per
-- sale, all or nothing. Writes stock - k, sold + k, k entries. Returns k; with a key seen
-- before, its first answer (a string: nothing written).
-- KEYS and ARGV by name (the C side reads these two lines too, build/script_args.h); a
-- sale with an idempotency key (then one sale) passes the last key. ARG.stock is the
-- stock read under the lock, ARG.count the sales k; ARG.requests the first of k request
-- ids (with a key, there even when k is 0).
local KEY = {stock = 1, sold = 2, orders = 3, record = 4}
local ARG = {stock = 1, count = 2, instance = 3, owner = 4, token = 5, idem_ttl = 6,
             requests = 7}
-- include: idempotency.lua
local keyed = #KEYS == KEY.record
if keyed then
    local early = idem_seen(KEYS[KEY.record])
    if early then
        return early
    end
end
local stock = tonumber(ARGV[ARG.stock])
local k = tonumber(ARGV[ARG.count])
if k > 0 then
    redis.call('set', KEYS[KEY.stock], stock - k)
    redis.call('incrby', KEYS[KEY.sold], k)
end
for i = 1, k do
    redis.call('xadd', KEYS[KEY.orders], '*', 'instance', ARGV[ARG.instance], 'remaining', stock - i,
               'token', ARGV[ARG.token], 'owner', ARGV[ARG.owner], 'request', ARGV[ARG.requests + i - 1])
end
if keyed then
    local answer = k > 0 and ('200 ' .. (stock - 1)) or '409 0'
    idem_keep(KEYS[KEY.record], ARGV[ARG.idem_ttl],
              answer .. ' ' .. ARGV[ARG.token] .. ' ' .. ARGV[ARG.instance] .. ' ' .. ARGV[ARG.requests])
end
return k
