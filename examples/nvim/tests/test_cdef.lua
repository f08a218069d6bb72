-- The FFI declarations read from include/cursor_sdk.h at load time equal what the C
-- preprocessor makes of the header (cc -E -P, given by scripts/nvim-test.sh), declaration by
-- declaration, and every declared function resolves in the library. A header change the Lua
-- reader gets wrong fails here.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

-- The declarations that mention the SDK, whitespace-normalized, in order.
local function decls(text)
  local out = {}
  for d in text:gmatch('[^;]+') do
    d = vim.trim(d:gsub('%s+', ' '):gsub(' ?([%(%)%*,{}]) ?', '%1'))
    if d:find('cursor_', 1, true) or d:find('CURSOR_', 1, true) then
      out[#out + 1] = d
    end
  end
  return out
end

H.run('the FFI declarations match the preprocessed header and the library', function()
  local L = require('cursor_sdk.ffi').load()
  local f = assert(io.open(H.env('CURSOR_NVIM_HEADER_I'), 'rb'))
  -- stdbool.h's `bool` macro expands to _Bool; LuaJIT knows both.
  local want = decls((f:read('*a'):gsub('%f[%w_]_Bool%f[^%w_]', 'bool')))
  f:close()
  local got = decls(L.cdef)
  assert(#want > 50, 'only ' .. #want .. ' declarations in the preprocessed header')
  for i = 1, math.max(#want, #got) do
    assert(got[i] == want[i], string.format('declaration %d differs:\n  FFI: %s\n  cc:  %s', i, tostring(got[i]),
      tostring(want[i])))
  end
  local functions = 0
  for _, d in ipairs(got) do
    local name = d:match('^[^%(]-[%s%*]([%w_]+)%(')
    if name and not d:match('^typedef') then
      local ok, err = pcall(function()
        return L.C[name]
      end)
      assert(ok, name .. ' is declared but does not resolve in ' .. L.lib_path .. ': ' .. tostring(err))
      functions = functions + 1
    end
  end
  assert(functions > 50, 'only ' .. functions .. ' functions found')
  io.stdout:write(string.format('  %d declarations, %d functions resolved\n', #got, functions))
  -- The reader must not pass anything the preprocessor would have removed.
  assert(not L.cdef:find('#', 1, true) and not L.cdef:find('CURSOR_NULLABLE', 1, true), 'directives or macros left')
end)
