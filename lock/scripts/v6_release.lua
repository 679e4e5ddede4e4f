-- v6_release.lua - delete the lock only if it holds our owner id, in one atomic step.
-- KEYS[1] lock key; ARGV[1] owner id. Returns 1 when deleted, 0 when not ours.
-- By hand: redis-cli --eval lock/scripts/v6_release.lua 'lock:{inventory001}' , OWNER
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
