-- v7_acquire.lua - take the reentrant lock: a hash {owner: hold count} with a TTL.
-- KEYS[1] lock key; ARGV[1] owner id; ARGV[2] lease in ms.
-- Returns the hold count after this acquire (1 first time, 2 nested, ...); when another
-- holds it, minus the ms its lease has left (at least 1), or 0 when it has no TTL.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    local count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return count
end
local left = redis.call('pttl', KEYS[1])
if left < 0 then
    return 0
end
return -math.max(left, 1)
