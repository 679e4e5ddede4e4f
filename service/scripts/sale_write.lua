-- sale_write.lua - the sale's writes under the lock: stock, sold and one ledger entry per
-- sale, all or nothing. KEYS[1] stock:{I}, KEYS[2] sold:{I}, KEYS[3] orders:{I};
-- ARGV[1] stock read under the lock, ARGV[2] sales k, ARGV[3] instance, ARGV[4] owner,
-- ARGV[5] token. Writes stock - k, sold + k, k entries. Returns k.
local stock = tonumber(ARGV[1])
local k = tonumber(ARGV[2])
redis.call('set', KEYS[1], stock - k)
redis.call('incrby', KEYS[2], k)
for i = 1, k do
    redis.call('xadd', KEYS[3], '*', 'instance', ARGV[3], 'remaining', stock - i,
               'token', ARGV[5], 'owner', ARGV[4])
end
return k
