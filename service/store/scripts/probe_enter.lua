-- probe_enter.lua - the mutual-exclusion probe: note who is inside the critical section.
-- KEYS[1] probe:{I} (a set of who is inside), KEYS[2] overlaps:{I}; ARGV[1] this sale's id.
-- Entering while someone else is inside counts one overlap. Returns how many are inside.
redis.call('sadd', KEYS[1], ARGV[1])
local inside = redis.call('scard', KEYS[1])
if inside > 1 then
    redis.call('incr', KEYS[2])
end
return inside
