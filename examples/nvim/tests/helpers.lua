-- Shared by the headless tests (scripts/nvim-test.sh): options for the bridge double or the real
-- bridge in a temp dir, a runner that exits non-zero on any failure, and waits on the loop.
local H = {}

function H.env(name)
  local v = os.getenv(name)
  assert(v and v ~= '', '$' .. name .. ' is not set (scripts/nvim-test.sh sets it)')
  return v
end

-- Client options like tests/c/harness.h's h_options: a temp workspace and HOME.
function H.client_options(bridge)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/home', 'p')
  H.tmp = dir
  return {
    bridgePath = bridge,
    workspace = dir,
    apiKey = 'test-dummy-key',
    bridgeEnv = {
      HOME = dir .. '/home',
      TMPDIR = dir,
      CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON = '[{"id":"composer-2"}]',
    },
  }
end

function H.buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

-- Runs the loop until cond() holds; fails after ms.
function H.wait(ms, cond, what)
  if not vim.wait(ms, cond, 5) then
    error('timed out after ' .. ms .. ' ms waiting for ' .. what, 0)
  end
end

-- Runs body; prints the outcome and quits with 0 (pass) or 1 (fail). Frees the client first.
function H.run(name, body)
  local t0 = vim.loop.hrtime()
  local ok, err = xpcall(body, debug.traceback)
  if package.loaded['cursor_sdk'] then
    local sok, serr = pcall(require('cursor_sdk').shutdown)
    if ok and not sok then
      ok, err = false, 'shutdown: ' .. tostring(serr)
    end
  end
  if H.tmp then
    vim.fn.delete(H.tmp, 'rf')
  end
  local ms = (vim.loop.hrtime() - t0) / 1e6
  io.stdout:write(string.format('%s %s (%.0f ms)\n', ok and 'ok  ' or 'FAIL', name, ms))
  if not ok then
    io.stdout:write(tostring(err) .. '\n')
  end
  io.stdout:flush()
  vim.cmd((ok and 'qa!' or 'cquit! 1'))
end

return H
