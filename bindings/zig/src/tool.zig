//! Custom tools as Zig functions: a comptime trampoline carries your context pointer through
//! the library's `void *user_data`; errors become error results the model sees.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const Error = errors.Error;

/// Accessors shared by `ToolCall` and `PendingToolCall`. Strings are borrowed until the call
/// is freed.
fn Accessors(comptime Self: type) type {
    return struct {
        /// The tool's name.
        pub fn name(self: *const Self) [:0]const u8 {
            return errors.span(c.cursor_tool_call_name(self.raw)) orelse "";
        }
        /// The arguments as JSON text (an object; numbers are doubles).
        pub fn args(self: *const Self) [:0]const u8 {
            return errors.span(c.cursor_tool_call_args_json(self.raw)) orelse "{}";
        }
        /// The tool-call id (matches the stream's `tool_call` events), or null.
        pub fn id(self: *const Self) ?[:0]const u8 {
            return errors.span(c.cursor_tool_call_id(self.raw));
        }
        /// The id of the agent whose run called the tool.
        pub fn agentId(self: *const Self) [:0]const u8 {
            return errors.span(c.cursor_tool_call_agent_id(self.raw)) orelse "";
        }
        /// The arguments parsed into `T` (copied into `gpa`; unknown fields ignored).
        pub fn parseArgs(self: *const Self, comptime T: type, gpa: std.mem.Allocator) !std.json.Parsed(T) {
            return std.json.parseFromSlice(T, gpa, self.args(), .{ .ignore_unknown_fields = true, .allocate = .alloc_always });
        }
    };
}

fn completeRaw(raw: *c.cursor_tool_call, result_json: [:0]const u8) Error!void {
    var e: ?*c.cursor_error = null;
    return errors.check(c.cursor_tool_call_complete(raw, result_json.ptr, &e), e, null);
}

fn failRaw(raw: *c.cursor_tool_call, message: [:0]const u8) Error!void {
    var e: ?*c.cursor_error = null;
    return errors.check(c.cursor_tool_call_fail(raw, message.ptr, &e), e, null);
}

/// One tool call, lent to your handler for the duration of the call. Answer it with `complete`
/// or `fail`, or `keep` it to answer later from any thread. Unanswered when the handler
/// returns: an error return is answered with the error's name as an error result the model
/// sees; a plain return with "dropped without an answer".
pub const ToolCall = struct {
    raw: *c.cursor_tool_call,
    state: enum { open, answered, kept } = .open,

    pub const name = Accessors(ToolCall).name;
    pub const args = Accessors(ToolCall).args;
    pub const id = Accessors(ToolCall).id;
    pub const agentId = Accessors(ToolCall).agentId;
    pub const parseArgs = Accessors(ToolCall).parseArgs;

    /// Answers with a result: any JSON value (a string or other value becomes text content).
    /// Malformed JSON is `error.InvalidArgument` and leaves the call unanswered.
    pub fn complete(self: *ToolCall, result_json: [:0]const u8) Error!void {
        try completeRaw(self.raw, result_json);
        self.state = .answered;
    }

    /// Answers with an error the model sees (the run goes on).
    pub fn fail(self: *ToolCall, message: [:0]const u8) Error!void {
        try failRaw(self.raw, message);
        self.state = .answered;
    }

    /// Takes the call out of the handler, to answer later (from any thread). The result owns
    /// the call: answer it, then `deinit` it. After `keep` the handler's return value is ignored.
    pub fn keep(self: *ToolCall) PendingToolCall {
        self.state = .kept;
        return .{ .raw = self.raw };
    }
};

/// A tool call answered after its handler returned. Owned: call `deinit` (an unanswered call
/// is then answered with an error). Exactly one answer; a second one, or one after
/// `Client.deinit` began, is `error.Usage`.
pub const PendingToolCall = struct {
    raw: *c.cursor_tool_call,

    pub const name = Accessors(PendingToolCall).name;
    pub const args = Accessors(PendingToolCall).args;
    pub const id = Accessors(PendingToolCall).id;
    pub const agentId = Accessors(PendingToolCall).agentId;
    pub const parseArgs = Accessors(PendingToolCall).parseArgs;

    pub fn complete(self: *PendingToolCall, result_json: [:0]const u8) Error!void {
        return completeRaw(self.raw, result_json);
    }

    pub fn fail(self: *PendingToolCall, message: [:0]const u8) Error!void {
        return failRaw(self.raw, message);
    }

    pub fn deinit(self: *PendingToolCall) void {
        c.cursor_tool_call_free(self.raw);
    }
};

/// The C callback for `handler` with a context of type `Ctx` (a pointer).
pub fn trampoline(comptime Ctx: type, comptime handler: fn (Ctx, *ToolCall) anyerror!void) c.cursor_tool_fn {
    comptime checkContext(Ctx);
    return &struct {
        fn call(user: ?*anyopaque, raw: ?*c.cursor_tool_call) callconv(.c) void {
            const r = raw orelse return;
            var tc: ToolCall = .{ .raw = r };
            // Errors never cross the C boundary: they become the call's error result.
            handler(fromUser(Ctx, user), &tc) catch |e| {
                if (tc.state == .open) failRaw(r, @errorName(e)) catch {};
            };
            if (tc.state != .kept) c.cursor_tool_call_free(r);
        }
    }.call;
}

pub fn checkContext(comptime Ctx: type) void {
    if (@typeInfo(Ctx) != .pointer or @typeInfo(Ctx).pointer.size != .one)
        @compileError("the context must be a single-item pointer, got " ++ @typeName(Ctx));
}

pub fn fromUser(comptime Ctx: type, user: ?*anyopaque) Ctx {
    return @ptrCast(@alignCast(user.?));
}

pub fn toUser(ctx: anytype) ?*anyopaque {
    return @ptrCast(@constCast(ctx));
}
