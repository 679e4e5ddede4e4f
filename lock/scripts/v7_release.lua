-- v7_release.lua - give back one hold of the reentrant lock; delete it at the last.
-- KEYS[1] lock key; ARGV[1] owner id.
-- Returns the holds left (0: deleted); -1 when the lock is not ours (nothing is changed).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if count <= 0 then
    redis.call('del', KEYS[1])
    return 0
end
return count
