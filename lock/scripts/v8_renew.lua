-- v8_renew.lua - extend the lease, but only while the hash still holds our owner id.
-- KEYS[1] lock key; ARGV[1] owner id; ARGV[2] lease in ms. Returns 1 renewed, 0 not ours.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
