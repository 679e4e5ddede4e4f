-- idempotency.lua - the idempotency prelude of the sale scripts: each names it on a line
-- "-- include: idempotency.lua", which the build replaces with this file
-- (build/scripts/NAME.lua is the whole script, runnable with redis-cli --eval).
-- A sale with an Idempotency-Key K passes one more key: idem:{I}:K, K's first answer,
-- beside the item (in its slot). That K is not reused for another item is checked
-- before, by the service, on a key of K's own (idem-item:K, in another slot on a
-- cluster: no script touches both).

-- K's first answer (a string) when K was used for this item before, else nil.
local function idem_seen(record)
    return redis.call('get', record) or nil
end

-- Keeps K's answer "STATUS REMAINING TOKEN INSTANCE REQUEST" for ttl ms.
local function idem_keep(record, ttl, answer)
    redis.call('set', record, answer, 'px', ttl)
end
