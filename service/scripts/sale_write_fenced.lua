-- sale_write_fenced.lua - the sale's writes under a fenced grant: refused unless the
-- grant's token, with the batch's number within the grant, is strictly greater than the
-- last writer's (Kleppmann's fencing, checked where the stock is written).
-- KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I}, KEYS[4] written:{I} (a hash:
-- token and batch of the last write); ARGV[1] stock read under the lock, ARGV[2] sales k,
-- ARGV[3] instance, ARGV[4] owner, ARGV[5] token, ARGV[6] batch (1, 2, ... in the grant).
-- Writes stock - k, sold + k, k entries and the new last writer. Returns k, or the error
-- lease_lost with nothing written.
local last = redis.call('hmget', KEYS[4], 'token', 'batch')
local last_token, last_batch = tonumber(last[1]) or 0, tonumber(last[2]) or 0
local token, batch = tonumber(ARGV[5]), tonumber(ARGV[6])
if token < last_token or (token == last_token and batch <= last_batch) then
    return redis.error_reply('lease_lost')
end
local stock = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
redis.call('hset', KEYS[4], 'token', token, 'batch', batch)
redis.call('set', KEYS[1], stock - k)
redis.call('incrby', KEYS[2], k)
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[3], 'remaining', stock - i,
               'token', ARGV[5], 'owner', ARGV[4])
end
return k
