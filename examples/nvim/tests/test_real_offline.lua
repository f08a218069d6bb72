-- The real bridge, offline (no Cursor backend reachable): the failing turn's reason is shown in
-- the buffer.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

H.run('the offline turn on the real bridge shows its reason', function()
  local sdk = require('cursor_sdk')
  sdk.setup({ client = H.client_options(H.env('CURSOR_SDK_TEST_REAL_BRIDGE')), agent = { model = 'composer-2' } })
  vim.cmd('runtime plugin/cursor_sdk.lua')
  vim.cmd('CursorAsk Say hello')
  local s = sdk.last
  H.wait(90000, function()
    return s.done
  end, 'the offline turn to end')
  local text = H.buffer_text(s.buf)
  io.stdout:write('  buffer: ' .. text:gsub('\n', ' | ') .. '\n')
  assert(s.status == 'error', 'status ' .. tostring(s.status))
  assert(text:find('[error]', 1, true), 'no [error] line:\n' .. text)
  assert(text:find('API key exchange', 1, true), 'the reason is not in the buffer:\n' .. text)
end)
