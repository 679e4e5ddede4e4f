-- sale_write_fenced.lua - the sale's writes under a fenced grant: refused unless the
-- grant's token, with the batch's number within the grant, is strictly greater than the
-- last writer's, and the token is not older than the last one issued (Kleppmann's
-- fencing, checked where the stock is written).
-- Writes stock - k, sold + k, k entries and the new last writer. Returns k; with a key
-- seen before, its first answer (a string: nothing written); error lease_lost (nothing
-- written; an error's first word is its code: the service reads only that).
-- KEYS and ARGV by name (the C side reads these two lines too, build/script_args.h):
-- KEY.written is a hash (token and batch of the last write), KEY.fence the last token
-- issued; a sale with an idempotency key (then one sale) passes the last key.
-- ARG.stock is the stock read under the lock, ARG.count the sales k, ARG.batch 1, 2, ...
-- within the grant; ARG.requests the first of k request ids (with a key, there even
-- when k is 0).
-- Why the last token issued: a holder paused after its lease check writes after the next
-- holder was granted and read the stock, but before that one wrote; against the last
-- writer alone its token would pass, and the next holder's write, on its stale read, too.
local KEY = {stock = 1, sold = 2, orders = 3, written = 4, fence = 5, record = 6}
local ARG = {stock = 1, count = 2, instance = 3, owner = 4, token = 5, batch = 6, idem_ttl = 7,
             requests = 8}
-- include: idempotency.lua
local keyed = #KEYS == KEY.record
if keyed then
    local early = idem_seen(KEYS[KEY.record])
    if early then
        return early
    end
end
local last = redis.call('hmget', KEYS[KEY.written], 'token', 'batch')
local last_token, last_batch = tonumber(last[1]) or 0, tonumber(last[2]) or 0
local issued = tonumber(redis.call('get', KEYS[KEY.fence])) or 0
local token, batch = tonumber(ARGV[ARG.token]), tonumber(ARGV[ARG.batch])
if token < issued or token < last_token or (token == last_token and batch <= last_batch) then
    return redis.error_reply('lease_lost the token is older than the last write or the last token issued')
end
local stock = tonumber(ARGV[ARG.stock])
local k = tonumber(ARGV[ARG.count])
redis.call('hset', KEYS[KEY.written], 'token', token, 'batch', batch)
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
