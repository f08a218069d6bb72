-- :CursorCancel stops a running turn: the stream ends with status cancelled, shown in the buffer.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

H.run(':CursorCancel stops a streaming turn', function()
  local sdk = require('cursor_sdk')
  sdk.setup({ client = H.client_options(H.env('CURSOR_SDK_TEST_DOUBLE')), agent = { model = 'composer-2' } })
  vim.cmd('runtime plugin/cursor_sdk.lua')
  vim.cmd('CursorAsk scenario:slow:20')
  local s = sdk.last
  assert(vim.api.nvim_get_current_buf() == s.buf, 'the answer buffer is not shown')
  H.wait(20000, function()
    return H.buffer_text(s.buf):find('chunk 3 ', 1, true) ~= nil
  end, 'three chunks')
  local t0 = vim.loop.hrtime()
  vim.cmd('CursorCancel')
  local cancel_ms = (vim.loop.hrtime() - t0) / 1e6
  assert(cancel_ms < 100, string.format(':CursorCancel blocked for %.0f ms', cancel_ms))
  H.wait(10000, function()
    return s.done
  end, 'the cancelled turn to end')
  local text = H.buffer_text(s.buf)
  assert(s.status == 'cancelled', 'status ' .. tostring(s.status))
  assert(text:find('[cancelled]', 1, true), 'the buffer does not say it was cancelled:\n' .. text)
  assert(not text:find('chunk 1000 ', 1, true), 'the turn went on after the cancel')
  assert(s.run == nil and s.agent == nil, 'the run and agent were not freed')

  -- Cancelled at once, while the agent is still being created and sent to off the main loop.
  vim.cmd('CursorAsk scenario:slow:20')
  s = sdk.last
  vim.cmd('CursorCancel')
  H.wait(10000, function()
    return s.done
  end, 'the turn cancelled before it started to end')
  assert(s.status == 'cancelled', 'status ' .. tostring(s.status))
  assert(not H.buffer_text(s.buf):find('chunk 100 ', 1, true), 'the early cancel was lost')

  -- Wiping the answer buffer cancels its run, which is then freed.
  vim.cmd('CursorAsk scenario:slow:20')
  s = sdk.last
  H.wait(20000, function()
    return H.buffer_text(s.buf):find('chunk 2 ', 1, true) ~= nil
  end, 'two chunks')
  vim.cmd('bwipeout! ' .. s.buf)
  H.wait(10000, function()
    return s.done
  end, 'the run of the wiped buffer to end')
  assert(s.status == 'cancelled', 'status ' .. tostring(s.status))
  assert(s.run == nil and s.agent == nil, 'the run and agent were not freed')
end)
