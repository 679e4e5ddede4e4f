-- sale.lua - wrk script: sends sales, counts the answers by status across all wrk
-- threads and prints them, with the latency percentiles, as one JSON line in done().
--
--   wrk -t 2 -c 100 -d 10s --timeout 30s -s loadtest/sale.lua http://127.0.0.1:8080 \
--       -- '/inventory/sale?item=inventory001&work_ms=5'
--
-- The first argument after `--` is the request path (default /inventory/sale). A second,
-- PREFIX, has each thread write one line per answer to the file PREFIX<thread number>:
-- the status, the error ("-" for none), the request id ("-" when the body has none) and
-- whether a Retry-After header came (1 or 0); the redis-crash scenario reads them.
-- Arguments items=K (and zipf=S) spread the sales over item0001 .. itemK (item= in the
-- path replaced): round robin, or with zipf=S at random, the item of rank r (item0001 is
-- the hottest) with weight 1/r^S; each thread draws from its own seed.
-- Each wrk thread is its own Lua state: the counters below are per thread; done()
-- runs in the main state and sums them through thread:get().

local threads = {}

-- Main state, once per thread before it starts: keep the handle for done().
function setup(thread)
   threads[#threads + 1] = thread
   thread:set("thread_number", #threads)
end

-- Thread state: the path, and this thread's counters (globals, so thread:get sees them).
function init(args)
   wrk.path = args[1] or "/inventory/sale"
   ok, sold_out, unavailable, lock_timeout, other = 0, 0, 0, 0, 0
   local prefix, k, s = nil, 0, 0
   for i = 2, #args do
      local name, value = args[i]:match("^(%a+)=([%d.]+)$")
      if name == "items" then k = tonumber(value)
      elseif name == "zipf" then s = tonumber(value)
      elseif args[i] ~= "-" then prefix = args[i] end
   end
   if prefix then
      record = assert(io.open(prefix .. thread_number, "w"))
      record:setvbuf("line")             -- whole lines, even when wrk is killed
   end
   if k > 0 then items_init(k, s) end
end

-- Thread state: one request per item, built once, and with zipf the cumulative weights.
function items_init(k, s)
   local base, query = wrk.path:match("^([^?]*)%??(.*)$")
   query = query:gsub("item=[^&]*&?", ""):gsub("&$", "")
   requests, cdf, next_item = {}, nil, 0
   for i = 1, k do
      requests[i] = wrk.format(nil, string.format("%s?item=item%04d%s", base, i,
                                                  query ~= "" and "&" .. query or ""))
   end
   if s > 0 then
      cdf, sum = {}, 0
      for i = 1, k do sum = sum + i ^ -s; cdf[i] = sum end
      math.randomseed(os.time() * 100 + thread_number)
   end
end

-- Thread state, once per request: the next item's, when items were given.
function request()
   if not requests then return wrk.format() end
   if not cdf then
      next_item = next_item % #requests + 1
      return requests[next_item]
   end
   local u, lo, hi = math.random() * cdf[#cdf], 1, #cdf
   while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if cdf[mid] > u then hi = mid else lo = mid + 1 end
   end
   return requests[lo]
end

-- Thread state, once per answer. Only a 503's body is looked at (lock_timeout or not),
-- unless answers are recorded.
function response(status, headers, body)
   if record then
      record:write(status, " ", body and body:match('"error":"([%w_]+)"') or "-", " ",
                   body and body:match('"request_id":"([%w%-_.:=+/]+)"') or "-", " ",
                   (headers["Retry-After"] or headers["retry-after"]) and 1 or 0, "\n")
   end
   if status == 200 then
      ok = ok + 1
   elseif status == 409 then
      sold_out = sold_out + 1
   elseif status == 503 then
      unavailable = unavailable + 1
      if body and string.find(body, "lock_timeout", 1, true) then
         lock_timeout = lock_timeout + 1
      end
   else
      other = other + 1
   end
end

-- Main state, after the run: one JSON line on stdout (after wrk's own report).
function done(summary, latency, requests)
   local n = { ok = 0, sold_out = 0, unavailable = 0, lock_timeout = 0, other = 0 }
   for _, thread in ipairs(threads) do
      for name, _ in pairs(n) do
         n[name] = n[name] + (thread:get(name) or 0)
      end
   end
   local e = summary.errors
   local secs = summary.duration / 1e6
   local function ms(us) return us / 1000 end
   io.write(string.format(
      '{"requests":%d,"ok":%d,"sold_out":%d,"unavailable":%d,"lock_timeout":%d,' ..
      '"other":%d,"socket_errors":%d,"timeouts":%d,"duration_s":%.3f,"rps":%.1f,' ..
      '"p50_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f}\n',
      summary.requests, n.ok, n.sold_out, n.unavailable, n.lock_timeout,
      n.other, e.connect + e.read + e.write, e.timeout, secs,
      secs > 0 and summary.requests / secs or 0,
      ms(latency:percentile(50)), ms(latency:percentile(90)),
      ms(latency:percentile(99)), ms(latency.max)))
end
