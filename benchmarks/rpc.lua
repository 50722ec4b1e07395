-- POST one JSON-RPC request per call and check every answer.
--
-- Environment: BENCH_BODY (the request body), BENCH_HEADERS ("Name: value"
-- lines), BENCH_EXPECT (a string every good body contains, e.g. a tool name).
-- An answer is an error unless its status is 200 and its body holds a
-- JSON-RPC result: "jsonrpc", "result", no "error" member, not "isError":true.
-- done() prints one JSON line the runner reads.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = "POST"
  wrk.body = os.getenv("BENCH_BODY")
  for line in (os.getenv("BENCH_HEADERS") or ""):gmatch("[^\n]+") do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    if name then
      wrk.headers[name] = value
    end
  end
  expect = os.getenv("BENCH_EXPECT") or ""
  bad = 0
  good = 0
  sample = ""
end

local function valid(body)
  if not body:find('"jsonrpc"', 1, true) then return false end
  if not body:find('"result"', 1, true) then return false end
  if body:find('"error":', 1, true) then return false end
  if body:find('"isError":%s*true') then return false end
  return body:find(expect, 1, true) ~= nil
end

function response(status, headers, body)
  if status == 200 and valid(body) then
    good = good + 1
  else
    bad = bad + 1
    if sample == "" then
      sample = tostring(status) .. " " .. body:sub(1, 200)
    end
  end
end

function done(summary, latency, requests)
  local bad_total, good_total, first = 0, 0, ""
  for _, thread in ipairs(threads) do
    bad_total = bad_total + thread:get("bad")
    good_total = good_total + thread:get("good")
    local s = thread:get("sample")
    if first == "" and s ~= nil then first = s:gsub('[%c"\\]', " ") end
  end
  local e = summary.errors
  local socket_errors = e.connect + e.read + e.write + e.timeout
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d,'
      .. ' "good": %d, "bad": %d, "socket_errors": %d, "sample": "%s"}\n',
    summary.requests, summary.duration, latency:percentile(50),
    latency:percentile(99), good_total, bad_total, socket_errors, first))
end
