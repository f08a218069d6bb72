-- Streaming on the bridge double while a 10 ms timer ticks.
-- 1. A turn streaming a chunk every 80 ms for 2 s: no tick is late by more than 50 ms, and
--    the text arrives in the buffer in many changes, in order, without a gap.
-- 2. A fast turn (scenario:long, thousands of events at once): the buffer ends up holding the
--    whole text, written in several changes (the drain budget yields to the loop in between).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

-- Starts a 10 ms timer; returns a function that stops it and gives (ticks, worst lateness ms).
local function ticker()
  local timer, worst, ticks, last = vim.loop.new_timer(), 0, 0, vim.loop.hrtime()
  timer:start(10, 10, function()
    local now = vim.loop.hrtime()
    worst = math.max(worst, (now - last) / 1e6 - 10)
    last, ticks = now, ticks + 1
  end)
  return function()
    timer:stop()
    timer:close()
    return ticks, worst
  end
end

local function count_changes(buf)
  local n = { 0 }
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      n[1] = n[1] + 1
    end,
  })
  return n
end

-- The answer part of the buffer (after the prompt line and the blank line).
local function body(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 2, -1, false), '\n')
end

H.run('streaming into the buffer never delays a 10 ms timer by 50 ms', function()
  local sdk = require('cursor_sdk')
  sdk.setup({ client = H.client_options(H.env('CURSOR_SDK_TEST_DOUBLE')), agent = { model = 'composer-2' } })
  vim.cmd('runtime plugin/cursor_sdk.lua')

  -- 1. Paced: a chunk every 80 ms, so a read that blocked until the next chunk would make a
  -- tick more than 50 ms late. The machine is shared: a tick can also be late because the
  -- process was not scheduled, so the check passes if one of three turns keeps every tick in
  -- time (a plugin that blocks fails all three). Each turn must stream correctly.
  local attempts = {}
  for attempt = 1, 3 do
    local stop = ticker()
    local t0 = vim.loop.hrtime()
    vim.cmd('CursorAsk scenario:slow:80')
    local s = sdk.last
    local changes = count_changes(s.buf)
    vim.wait(2000, function()
      return s.done
    end, 5)
    vim.cmd('CursorCancel')
    H.wait(10000, function()
      return s.done
    end, 'the paced turn to end after the cancel')
    local took = (vim.loop.hrtime() - t0) / 1e6
    local ticks, worst = stop()
    local text = body(s.buf)
    local chunks = 0
    for n in text:gmatch('chunk (%d+) ') do
      chunks = chunks + 1
      assert(tonumber(n) == chunks, 'chunk ' .. n .. ' arrived in place of chunk ' .. chunks .. ': ' .. text)
    end
    io.stdout:write(string.format('  paced #%d: %d chunks in %.0f ms, %d buffer changes, %d ticks, worst tick %.1f ms late\n',
      attempt, chunks, took, changes[1], ticks, worst))
    assert(s.status == 'cancelled', 'status ' .. tostring(s.status) .. ': ' .. tostring(s.error))
    assert(took >= 1000, string.format('the turn took only %.0f ms', took))
    assert(ticks >= took / 10 / 3, string.format('only %d ticks in %.0f ms', ticks, took))
    assert(chunks >= 10, 'only ' .. chunks .. ' chunks arrived in 2 s')
    assert(changes[1] >= 10, 'the text arrived in ' .. changes[1] .. ' buffer change(s), not as it came')
    assert(text:find('chunk ' .. chunks .. ' \n\n[cancelled]', 1, true), 'the text does not end with the cancel:\n' .. text)
    attempts[#attempts + 1] = string.format('%.1f', worst)
    if worst <= 50 then
      break
    end
    assert(attempt < 3, 'a timer tick was late by more than 50 ms in each of 3 turns (ms: '
      .. table.concat(attempts, ', ') .. ')')
  end

  -- 2. As fast as the double can send.
  local N = 20000
  local stop = ticker()
  local t0 = vim.loop.hrtime()
  vim.cmd('CursorAsk scenario:long:' .. N)
  local s = sdk.last
  local changes = count_changes(s.buf)
  H.wait(60000, function()
    return s.done
  end, 'the fast turn to end')
  local took = (vim.loop.hrtime() - t0) / 1e6
  local ticks, worst = stop()
  io.stdout:write(string.format('  fast: %d events in %.0f ms, %d buffer changes, %d ticks, worst tick %.1f ms late\n',
    N, took, changes[1], ticks, worst))
  assert(s.status == 'finished', 'status ' .. tostring(s.status) .. ': ' .. tostring(s.error))
  local want = {}
  for i = 0, N - 1 do
    want[#want + 1] = 't' .. i .. ' '
  end
  want = table.concat(want)
  local text = body(s.buf)
  assert(text == want, string.format('the buffer holds %d bytes, want %d', #text, #want))
  assert(changes[1] >= 3, 'the fast text arrived in ' .. changes[1] .. ' buffer change(s)')
end)
