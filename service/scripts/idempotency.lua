-- idempotency.lua - the idempotency prelude of the sale scripts: each names it on a line
-- "-- include: idempotency.lua", which the build replaces with this file
-- (build/scripts/NAME.lua is the whole script, runnable with redis-cli --eval).
-- A sale with an Idempotency-Key K passes two more keys: idem:{I}:K (K's first answer,
-- beside the item) and idem-item:K (the item K was first used for).

-- What to return at once for K: nil when K is new; its first answer (a string) when it
-- was used for this item; the error key_reused ITEM when it was used for another.
local function idem_seen(record, binding, item)
    local first_item = redis.call('get', binding)
    if first_item and first_item ~= item then
        return redis.error_reply('key_reused ' .. first_item)
    end
    return redis.call('get', record) or nil
end

-- Keeps K's answer "STATUS REMAINING TOKEN INSTANCE REQUEST" (and its item) for ttl ms.
local function idem_keep(record, binding, item, ttl, answer)
    redis.call('set', binding, item, 'px', ttl)
    redis.call('set', record, answer, 'px', ttl)
end
