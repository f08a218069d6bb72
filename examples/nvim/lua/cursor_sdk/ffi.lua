-- LuaJIT FFI over include/cursor_sdk.h: the declarations are read from the header itself at load
-- time (no compiled glue, nothing to regenerate), then the library is loaded with ffi.load.
local ffi = require('ffi')

local M = {}

-- The header as C declarations LuaJIT's ffi.cdef takes: comments, preprocessor directives (with
-- their continuation lines), the C++-only `extern "C"` block and the annotation macros removed.
-- Everything else (enums, opaque structs, callback typedefs, prototypes) is plain C99.
function M.cdef_text(header)
  local text = header:gsub('/%*.-%*/', ''):gsub('//[^\n]*', '')
  local out, skip, in_directive = {}, 0, false
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    local directive = line:match('^%s*#%s*(%a+)')
    if in_directive then
      in_directive = line:match('\\%s*$') ~= nil
    elseif directive then
      in_directive = line:match('\\%s*$') ~= nil
      if skip > 0 then
        if directive:match('^if') then
          skip = skip + 1
        elseif directive == 'endif' then
          skip = skip - 1
        end
      elseif line:match('^%s*#%s*ifdef%s+__cplusplus') then
        skip = 1
      end
    elseif skip == 0 then
      out[#out + 1] = line
    end
  end
  text = table.concat(out, '\n')
  for _, macro in ipairs({ 'CURSOR_OPEN_ENUM', 'CURSOR_NULLABLE', 'CURSOR_NONNULL', 'CURSOR_ASSUME_NONNULL_BEGIN',
    'CURSOR_ASSUME_NONNULL_END' }) do
    text = text:gsub('%f[%w_]' .. macro .. '%f[^%w_]', '')
  end
  return text
end

local function read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function exists(path)
  return path and vim.loop.fs_stat(path) ~= nil
end

-- The first existing path of the candidates (nil entries skipped).
local function first(candidates)
  for _, p in ipairs(candidates) do
    if exists(p) then
      return p
    end
  end
end

-- This plugin's checkout root (examples/nvim/lua/cursor_sdk/ffi.lua -> the repository).
local here = vim.loop.fs_realpath(debug.getinfo(1, 'S').source:sub(2)) or ''
local repo = here:match('^(.*)/examples/nvim/lua/cursor_sdk/ffi%.lua$')

--- Loads the header's declarations and the library once; returns { C = lib, cdef = text,
--- lib_path = path }. opts.lib / $CURSOR_SDK_LIB / the repository's build / the system's
--- libcursor_sdk.so.0; opts.header / $CURSOR_SDK_HEADER / next to the library / the repository's.
function M.load(opts)
  if M.loaded then
    return M.loaded
  end
  opts = opts or {}
  local lib_path = opts.lib or os.getenv('CURSOR_SDK_LIB')
    or first({ repo and repo .. '/target/release/libcursor_sdk.so', repo and repo .. '/target/debug/libcursor_sdk.so' })
    or 'libcursor_sdk.so.0'
  local lib_dir = lib_path:match('^(.*)/[^/]+$')
  local header_path = opts.header or os.getenv('CURSOR_SDK_HEADER')
    or first({ lib_dir and lib_dir .. '/../include/cursor_sdk.h', repo and repo .. '/include/cursor_sdk.h',
      '/usr/local/include/cursor_sdk.h', '/usr/include/cursor_sdk.h' })
  local header = header_path and read(header_path)
  if not header then
    error('cursor_sdk: cannot read cursor_sdk.h (set the header option or $CURSOR_SDK_HEADER)', 0)
  end
  local text = M.cdef_text(header)
  ffi.cdef(text)
  local ok, lib = pcall(ffi.load, lib_path)
  if not ok then
    error('cursor_sdk: cannot load ' .. lib_path .. ' (set the lib option or $CURSOR_SDK_LIB): ' .. tostring(lib), 0)
  end
  M.loaded = { C = lib, cdef = text, lib_path = lib_path, header_path = header_path }
  return M.loaded
end

return M
