-- A queued tool answered by a Lua function on the editor's main loop (scenario:tool on the
-- double), and a Lua error becoming a tool error the model sees.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

H.run('tools are answered by Lua functions on the main loop', function()
  local sdk = require('cursor_sdk')
  local seen = {}
  sdk.setup({
    client = H.client_options(H.env('CURSOR_SDK_TEST_DOUBLE')),
    agent = { model = 'composer-2' },
    tools = {
      lua_tool = {
        description = 'Answers from Lua',
        schema = { type = 'object', properties = { input = { type = 'string' } } },
        fn = function(args, call)
          seen[#seen + 1] = { args = args, call = call, fast = vim.in_fast_event(), buf = vim.api.nvim_get_current_buf() }
          return { answered_by = 'lua', echo = args.input }
        end,
      },
      lua_fails = function()
        error('the Lua tool failed on purpose')
      end,
    },
  })
  vim.cmd('runtime plugin/cursor_sdk.lua')

  vim.cmd('CursorAsk scenario:tool:lua_tool')
  local s = sdk.last
  H.wait(20000, function()
    return s.done
  end, 'the tool turn to end')
  local text = H.buffer_text(s.buf)
  assert(s.status == 'finished', 'status ' .. tostring(s.status) .. ': ' .. text)
  assert(#seen == 1, #seen .. ' calls')
  assert(seen[1].fast == false, 'the tool ran in a fast (libuv) callback, not on the main loop')
  assert(seen[1].call.name == 'lua_tool' and seen[1].call.agent_id ~= '' and seen[1].call.id, vim.inspect(seen[1].call))
  assert(tostring(seen[1].args.input):find('hello from the double', 1, true), vim.inspect(seen[1].args))
  assert(text:find('answered_by', 1, true) and text:find('lua', 1, true), 'the tool result is not in the answer:\n' .. text)

  vim.cmd('CursorAsk scenario:tool:lua_fails')
  s = sdk.last
  H.wait(20000, function()
    return s.done
  end, 'the failing tool turn to end')
  text = H.buffer_text(s.buf)
  assert(s.status == 'finished', 'a failing tool ended the run: ' .. tostring(s.status))
  assert(text:find('failed on purpose', 1, true), 'the Lua error did not reach the model:\n' .. text)
end)
