-- :CursorAsk {prompt} streams a new agent's answer into a buffer; :CursorCancel stops it.
if vim.g.loaded_cursor_sdk then
  return
end
vim.g.loaded_cursor_sdk = true

vim.api.nvim_create_user_command('CursorAsk', function(o)
  require('cursor_sdk').ask(o.args)
end, { nargs = '+', desc = 'Ask a Cursor agent; the answer streams into a new buffer' })

vim.api.nvim_create_user_command('CursorCancel', function()
  require('cursor_sdk').cancel()
end, { nargs = 0, desc = 'Cancel the Cursor run of this buffer (else the latest)' })

vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    if package.loaded['cursor_sdk'] then
      require('cursor_sdk').shutdown()
    end
  end,
})
