-- v9_acquire.lua - v7's reentrant acquire plus a fencing token per grant.
-- KEYS[1] lock key, KEYS[2] fence counter; ARGV[1] owner id; ARGV[2] lease in ms.
-- Returns {hold count, token}: a first grant takes the next token (INCR on the fence
-- counter) and keeps it in the hash beside the count; a nested grant gets the same one.
-- When another holds it: {minus the ms its lease has left (at least 1), or 0 when it has
-- no TTL; 0}.
-- By hand: redis-cli --eval lock/scripts/v9_acquire.lua 'lock:{inventory001}' 'fence:{inventory001}' , OWNER 30000
if redis.call('exists', KEYS[1]) == 0 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hset', KEYS[1], ARGV[1], 1, ':token', token)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, token}
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    local count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {count, tonumber(redis.call('hget', KEYS[1], ':token'))}
end
local left = redis.call('pttl', KEYS[1])
if left < 0 then
    return {0, 0}
end
return {-math.max(left, 1), 0}
