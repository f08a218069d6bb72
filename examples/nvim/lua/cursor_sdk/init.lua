-- Cursor agents in Neovim over the cursor_sdk C ABI (LuaJIT FFI, no compiled glue).
--
-- Nothing here waits on the agent on the editor's thread:
--   * creating the agent and sending (which may start the bridge, and makes RPCs) runs on the
--     libuv thread pool (vim.loop.new_work, in its own Lua state; only numbers cross over);
--   * the run is read through its wake descriptor (cursor_run_wait_fd) watched by a
--     vim.loop poll handle, draining at most DRAIN_BUDGET_NS per wake-up so a fast stream
--     cannot hog the loop (the descriptor stays readable until the queue is empty);
--   * tools are queued tools (cursor_client_add_queued_tool): the library never calls into
--     LuaJIT from its threads; calls are taken when cursor_client_tool_fd is readable and
--     answered by Lua functions on the main loop.
local ffi = require('ffi')
local uv = vim.loop

local M = { config = {}, sessions = {} }

local DRAIN_BUDGET_NS = 4e6

local L, C -- the loaded library (cursor_sdk.ffi), once needed
local client -- cursor_client *, once needed
local tool_poll -- poll handle on the client's tool descriptor
local works = 0 -- create+send jobs on the thread pool (they use the client)
local live = {} -- sessions whose run handle is held (freed as the run ends, or at shutdown)

local function lib()
  if not C then
    L = require('cursor_sdk.ffi').load(M.config)
    C = L.C
  end
  return C
end

-- The message of the error in `slot` (a cursor_error *[1]), freed; nil when there is none.
local function take_error(slot)
  local e = slot[0]
  if e == nil then
    return nil
  end
  local msg = ffi.string(C.cursor_error_message(e))
  C.cursor_error_free(e)
  slot[0] = nil
  return msg
end

local function check(status, slot, what)
  if status ~= C.CURSOR_OK then
    error(what .. ': ' .. (take_error(slot) or ffi.string(C.cursor_status_name(status))), 0)
  end
end

--- Options: lib, header (paths; see cursor_sdk.ffi), client (the client options table, e.g.
--- { apiKey = ..., workspace = ... }), agent (agent options, e.g. { model = 'composer-2' }),
--- tools ({ name = function(args, call) ... end } or { name = { fn, description, schema } }),
--- open ('split', 'vsplit', 'tabnew' or 'none': where :CursorAsk shows its buffer).
--- Call before the first :CursorAsk (tools are declared to agents created afterwards).
function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
end

-- A tool's spec as { fn, description, schema }.
local function tool_spec(name)
  local t = (M.config.tools or {})[name]
  if type(t) == 'function' then
    return { fn = t }
  end
  return t
end

local function answer(call)
  local name = ffi.string(C.cursor_tool_call_name(call))
  local info = { name = name, agent_id = ffi.string(C.cursor_tool_call_agent_id(call)) }
  local id = C.cursor_tool_call_id(call)
  info.id = id ~= nil and ffi.string(id) or nil
  local spec = tool_spec(name)
  local ok, result = pcall(function()
    assert(spec, 'no Lua function for the tool ' .. name)
    return spec.fn(vim.json.decode(ffi.string(C.cursor_tool_call_args_json(call))), info)
  end)
  if ok then
    local okj, json = pcall(vim.json.encode, result == nil and vim.NIL or result)
    if okj then
      C.cursor_tool_call_complete(call, json, nil)
    else
      C.cursor_tool_call_fail(call, 'the tool result is not JSON: ' .. tostring(json), nil)
    end
  else
    C.cursor_tool_call_fail(call, tostring(result), nil)
  end
  -- A call the client already answered (closed, timed out) refuses the answer; free it anyway.
  C.cursor_tool_call_free(call)
end

-- The tool descriptor is readable: take every queued call now (never blocks) and answer them
-- on the main loop, where Lua functions may use the editor's API.
local function on_tool_fd()
  local calls, out = {}, ffi.new('cursor_tool_call *[1]')
  while client ~= nil and C.cursor_client_next_tool_call(client, out, nil) == C.CURSOR_OK do
    calls[#calls + 1] = out[0]
  end
  if #calls > 0 then
    vim.schedule(function()
      for _, call in ipairs(calls) do
        answer(call)
      end
    end)
  end
end

--- The client (created on first use with the configured options and tools).
function M.client()
  if client then
    return client
  end
  lib()
  local out, err = ffi.new('cursor_client *[1]'), ffi.new('cursor_error *[1]')
  local opts = M.config.client and vim.json.encode(M.config.client) or nil
  check(C.cursor_client_new(opts, out, err), err, 'cursor_client_new')
  local c = out[0]
  local ok, msg = pcall(function()
    for name in pairs(M.config.tools or {}) do
      local spec = tool_spec(name)
      local schema = spec.schema and vim.json.encode(spec.schema) or nil
      check(C.cursor_client_add_queued_tool(c, name, spec.description, schema, err), err, 'tool ' .. name)
    end
    if next(M.config.tools or {}) then
      local fd = C.cursor_client_tool_fd(c)
      assert(fd >= 0, 'cursor_client_tool_fd failed')
      tool_poll = uv.new_poll(fd)
      tool_poll:start('r', on_tool_fd)
    end
  end)
  if not ok then
    C.cursor_client_free(c)
    error(msg, 0)
  end
  client = c
  return c
end

-- Runs on the thread pool, in its own Lua state: it gets the declarations, the library path and
-- the client as a number, and returns the agent and run as numbers (0 and a message on error).
local function create_and_send(cdef, lib_path, client_n, agent_opts, prompt)
  local ffi = require('ffi') -- luacheck: ignore (this state's own ffi)
  if not pcall(ffi.typeof, 'cursor_client') then
    ffi.cdef(cdef)
  end
  local C = ffi.load(lib_path)
  local c = ffi.cast('cursor_client *', client_n)
  local err, agent, run = ffi.new('cursor_error *[1]'), ffi.new('cursor_agent *[1]'), ffi.new('cursor_run *[1]')
  local function failed(what)
    local msg = err[0] ~= nil and ffi.string(C.cursor_error_message(err[0])) or 'failed'
    C.cursor_error_free(err[0])
    return 0, 0, what .. ': ' .. msg
  end
  if C.cursor_agent_create(c, agent_opts ~= '' and agent_opts or nil, agent, err) ~= C.CURSOR_OK then
    return failed('cursor_agent_create')
  end
  if C.cursor_agent_send(agent[0], prompt, nil, run, err) ~= C.CURSOR_OK then
    local a, r, msg = failed('cursor_agent_send')
    C.cursor_agent_free(agent[0])
    return a, r, msg
  end
  return tonumber(ffi.cast('uintptr_t', agent[0])), tonumber(ffi.cast('uintptr_t', run[0])), ''
end

-- Appends text at the end of the session's buffer (which only the session writes).
local function append(s, text)
  local buf = s.buf
  if text == '' or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local row = vim.api.nvim_buf_line_count(buf) - 1
  vim.api.nvim_buf_set_option(buf, 'modifiable', true)
  vim.api.nvim_buf_set_text(buf, row, s.col, row, s.col, vim.split(text, '\n', { plain = true }))
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  local last = text:match('[^\n]*$')
  s.col = text:find('\n', 1, true) and #last or s.col + #last
end

local function finish(s)
  s.poll:stop()
  s.poll:close()
  local json, err = ffi.new('char *[1]'), ffi.new('cursor_error *[1]')
  local result = {}
  if C.cursor_run_wait(s.run, 0, json, err) == C.CURSOR_OK and json[0] ~= nil then
    result = vim.json.decode(ffi.string(json[0]))
    C.cursor_string_free(json[0])
  else
    s.error = s.error or take_error(err) or 'the run ended without a result'
  end
  C.cursor_run_free(s.run)
  C.cursor_agent_free(s.agent)
  s.run, s.agent, live[s] = nil, nil, nil
  -- JSON nulls decode to vim.NIL.
  local function str(v)
    return type(v) == 'string' and v or nil
  end
  s.status = str(result.status) or 'error'
  local reason = s.status ~= 'finished' and (str(result.errorMessage) or s.error or '') or nil
  vim.schedule(function()
    if reason then
      local sep = s.col == 0 and '' or '\n\n' -- under the text, or on the empty answer line
      append(s, sep .. '[' .. s.status .. ']' .. (reason ~= '' and (' ' .. reason) or ''))
    end
    s.done = true
    vim.api.nvim_exec_autocmds('User', { pattern = 'CursorDone', modeline = false })
  end)
end

-- The run's descriptor is readable: drain events for at most DRAIN_BUDGET_NS (never blocks), then
-- write the text on the main loop. What is left keeps the descriptor readable for the next turn.
local function pump(s)
  if not s.run then
    return
  end
  local out, err, chunks, t0 = ffi.new('cursor_event *[1]'), ffi.new('cursor_error *[1]'), {}, uv.hrtime()
  while true do
    local st = C.cursor_run_next_event(s.run, 0, out, err)
    if st == C.CURSOR_OK then
      local ev = out[0]
      local text = C.cursor_event_text(ev)
      -- Assistant messages carry the text (deltas repeat it when enabled).
      if text ~= nil and C.cursor_event_kind(ev) == C.CURSOR_EVENT_MESSAGE then
        chunks[#chunks + 1] = ffi.string(text)
      end
      C.cursor_event_free(ev)
      if uv.hrtime() - t0 > DRAIN_BUDGET_NS then
        break
      end
    elseif st == C.CURSOR_TIMEOUT then
      break
    elseif st == C.CURSOR_END then
      if #chunks > 0 then
        local text = table.concat(chunks)
        chunks = {}
        vim.schedule(function()
          append(s, text)
        end)
      end
      finish(s)
      break
    elseif s.error_seen then
      -- An error is reported once and CURSOR_END follows; a second one (e.g. CURSOR_E_USAGE)
      -- means the handle cannot be read any more: end here rather than spin.
      local e = take_error(err)
      s.error = s.error or e
      finish(s)
      break
    else
      s.error, s.error_seen = take_error(err), true
    end
  end
  if #chunks > 0 then
    local text = table.concat(chunks)
    vim.schedule(function()
      append(s, text)
    end)
  end
end

local function open_buffer(prompt)
  local buf = vim.api.nvim_create_buf(true, true)
  local where = M.config.open or 'split'
  if where ~= 'none' then
    vim.cmd(where)
    vim.api.nvim_win_set_buf(0, buf)
  end
  pcall(vim.api.nvim_buf_set_name, buf, 'cursor://' .. buf)
  vim.api.nvim_buf_set_option(buf, 'filetype', 'markdown')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { '> ' .. prompt:gsub('\n', ' '), '', '' })
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
  return buf
end

--- Asks a new agent `prompt`; its answer streams into a new buffer. Returns the session
--- ({ buf, done, status ('finished', 'error', 'cancelled', …), error }); :CursorCancel (M.cancel) stops it.
function M.ask(prompt)
  local c = M.client()
  local s = { buf = open_buffer(prompt), prompt = prompt, col = 0 }
  M.sessions[s.buf] = s
  M.last = s
  -- Wiping the answer buffer cancels its run (which is then freed as it ends).
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = s.buf,
    once = true,
    callback = function()
      M.sessions[s.buf] = nil
      if s.run then
        C.cursor_run_cancel(s.run, nil)
      else
        s.cancel_requested = true
      end
    end,
  })
  local agent_opts = M.config.agent and vim.json.encode(M.config.agent) or ''
  works = works + 1
  local work = uv.new_work(create_and_send, function(agent_n, run_n, msg)
    works = works - 1
    if run_n == 0 then
      s.status, s.error = 'error', msg
      vim.schedule(function()
        append(s, '[error] ' .. msg)
        s.done = true
        vim.api.nvim_exec_autocmds('User', { pattern = 'CursorDone', modeline = false })
      end)
      return
    end
    s.agent, s.run = ffi.cast('cursor_agent *', agent_n), ffi.cast('cursor_run *', run_n)
    live[s] = true
    if s.cancel_requested then
      C.cursor_run_cancel(s.run, nil)
    end
    local fd = C.cursor_run_wait_fd(s.run)
    s.poll = uv.new_poll(fd)
    s.poll:start('r', function()
      pump(s)
    end)
  end)
  work:queue(L.cdef, L.lib_path, tonumber(ffi.cast('uintptr_t', c)), agent_opts, prompt)
  return s
end

--- Cancels the session shown in the current buffer, else the latest one. Never blocks: the
--- stream then ends by itself with status cancelled.
function M.cancel()
  local s = M.sessions[vim.api.nvim_get_current_buf()] or M.last
  if not s or s.done then
    return
  end
  if s.run then
    C.cursor_run_cancel(s.run, nil)
  else
    s.cancel_requested = true
  end
end

--- Frees everything (VimLeavePre): cancels and frees live runs, waits for jobs in flight, then
--- frees the client (which stops the bridge: at most a few seconds).
function M.shutdown()
  vim.wait(10000, function()
    return works == 0
  end, 10)
  for s in pairs(live) do
    s.poll:stop()
    s.poll:close()
    C.cursor_run_cancel(s.run, nil)
    C.cursor_run_free(s.run)
    C.cursor_agent_free(s.agent)
    s.run, s.agent, live[s] = nil, nil, nil
  end
  if tool_poll then
    tool_poll:stop()
    tool_poll:close()
    tool_poll = nil
  end
  if client then
    local c = client
    client = nil
    C.cursor_client_free(c)
  end
end

return M
