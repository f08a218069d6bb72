//! The library's process-wide log sink (it prints nothing unless asked).
const c = @import("c");
const tool = @import("tool.zig");

pub const Level = enum(i32) {
    err = c.CURSOR_LOG_ERROR,
    warn = c.CURSOR_LOG_WARN,
    info = c.CURSOR_LOG_INFO,
    debug = c.CURSOR_LOG_DEBUG,
    _,
};

/// Sends lines at `level` or more severe to `handler(ctx, level, line)`, called from any
/// library thread, concurrently; `line` is borrowed for the call. `ctx` (a pointer) is
/// borrowed until the handler is replaced or removed (`clear` waits for calls in progress).
pub fn set(level: Level, ctx: anytype, comptime handler: fn (@TypeOf(ctx), Level, [:0]const u8) void) void {
    const Ctx = @TypeOf(ctx);
    comptime tool.checkContext(Ctx);
    const f = struct {
        fn call(user: ?*anyopaque, lvl: c.cursor_log_level, line: [*c]const u8) callconv(.c) void {
            const l: [*:0]const u8 = if (line == null) "" else @ptrCast(line);
            handler(tool.fromUser(Ctx, user), @enumFromInt(@as(i32, @intCast(lvl))), std.mem.span(l));
        }
        const std = @import("std");
    }.call;
    c.cursor_set_log_callback(@intFromEnum(level), &f, tool.toUser(ctx), null);
}

/// Removes the handler; when it returns, no call of the previous one runs.
pub fn clear() void {
    c.cursor_set_log_callback(@intFromEnum(Level.err), null, null, null);
}
