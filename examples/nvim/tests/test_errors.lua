-- Turns that fail on the bridge double show why in the buffer: a scripted failure, and a bridge
-- that dies in the middle of the stream (the stream's error, then its end).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

H.run('failed turns show their reason', function()
  local sdk = require('cursor_sdk')
  sdk.setup({ client = H.client_options(H.env('CURSOR_SDK_TEST_DOUBLE')), agent = { model = 'composer-2' } })
  vim.cmd('runtime plugin/cursor_sdk.lua')
  for _, case in ipairs({ { 'scenario:fail', 'error' }, { 'scenario:die:6', 'error' } }) do
    vim.cmd('CursorAsk ' .. case[1])
    local s = sdk.last
    H.wait(30000, function()
      return s.done
    end, case[1] .. ' to end')
    local text = H.buffer_text(s.buf)
    io.stdout:write('  ' .. case[1] .. ': ' .. text:gsub('\n', ' | ') .. '\n')
    assert(s.status == case[2], case[1] .. ': status ' .. tostring(s.status))
    assert(text:find('[' .. case[2] .. '] ', 1, true), case[1] .. ': no reason in the buffer:\n' .. text)
    assert(s.run == nil and s.agent == nil, 'the run and agent were not freed')
  end
end)
