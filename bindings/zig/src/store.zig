//! Custom agent stores: every store operation of the client's bridge calls your handler.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const tool = @import("tool.zig");
const Error = errors.Error;

/// One store operation, lent to your handler for the duration of the call. Answer with `ok`
/// (the bare record, e.g. the agent object for `agents.get`, or null for a miss) or `fail`
/// before returning. An error return is answered with the error's name; a return without an
/// answer with an error saying so.
pub const StoreCall = struct {
    /// "agents", "runs", "runEvents" or "checkpoints".
    substore: [:0]const u8,
    /// "get", "create", "update", "delete", "list" or "append".
    method: [:0]const u8,
    /// The operation's input (JSON).
    input: [:0]const u8,
    reply: *c.cursor_store_reply,
    answered: bool = false,

    pub fn ok(self: *StoreCall, output_json: ?[:0]const u8) Error!void {
        var e: ?*c.cursor_error = null;
        try errors.check(c.cursor_store_reply_ok(self.reply, if (output_json) |o| o.ptr else null, &e), e, null);
        self.answered = true;
    }

    pub fn fail(self: *StoreCall, message: [:0]const u8) Error!void {
        var e: ?*c.cursor_error = null;
        try errors.check(c.cursor_store_reply_error(self.reply, message.ptr, &e), e, null);
        self.answered = true;
    }

    /// The input parsed into `T` (copied into `gpa`; unknown fields ignored).
    pub fn parseInput(self: *const StoreCall, comptime T: type, gpa: std.mem.Allocator) !std.json.Parsed(T) {
        return std.json.parseFromSlice(T, gpa, self.input, .{ .ignore_unknown_fields = true, .allocate = .alloc_always });
    }
};

/// The C callback for `handler` with a context of type `Ctx` (a pointer).
pub fn trampoline(comptime Ctx: type, comptime handler: fn (Ctx, *StoreCall) anyerror!void) c.cursor_store_fn {
    comptime tool.checkContext(Ctx);
    return &struct {
        fn call(user: ?*anyopaque, substore: [*c]const u8, method: [*c]const u8, input: [*c]const u8, reply: ?*c.cursor_store_reply) callconv(.c) void {
            var sc: StoreCall = .{
                .substore = errors.span(substore) orelse "",
                .method = errors.span(method) orelse "",
                .input = errors.span(input) orelse "null",
                .reply = reply orelse return,
            };
            handler(tool.fromUser(Ctx, user), &sc) catch |e| {
                if (!sc.answered) sc.fail(@errorName(e)) catch {};
            };
            if (!sc.answered) sc.fail("the store handler returned without an answer") catch {};
        }
    }.call;
}
