//! The Cursor agent SDK for Zig: a thin, allocation-free layer over the `cursor_sdk` C library.
//!
//! Ownership, everywhere: handles (`Client`, `Agent`, `Run`, `Event`, `PendingToolCall`) and
//! results (`String`, `Bytes`) are owned by you and released with `deinit`; strings returned
//! by a handle's accessors are borrowed from it until its `deinit`. Memory is allocated only
//! inside the C library, except where a function takes an allocator (`parse`, `dupe`,
//! `result`, `version`), which copies into yours. Options are encoded on the stack.
//!
//! Errors: every fallible function returns `Error` (one error per library status). Its last
//! parameter is an options struct whose `.diag` receives the full error (`Diagnostics`); a
//! run keeps its stream's failure in `Run.diagnostics`.
const std = @import("std");

/// The raw C API, translated from `cursor_sdk.h` at build time.
pub const c = @import("c");

const errors = @import("errors.zig");
pub const Error = errors.Error;
pub const Diagnostics = errors.Diagnostics;

const options = @import("options.zig");
pub const ClientOptions = options.ClientOptions;
pub const AgentOptions = options.AgentOptions;
pub const SendOptions = options.SendOptions;
pub const ListAgentsOptions = options.ListAgentsOptions;
pub const PageOptions = options.PageOptions;
pub const AgentQuery = options.AgentQuery;
pub const GetRunOptions = options.GetRunOptions;
pub const Call = options.Call;
pub const RawJson = options.RawJson;
pub const EnvVar = options.EnvVar;
pub const Mode = options.Mode;
pub const Runtime = options.Runtime;

const owned = @import("owned.zig");
pub const String = owned.String;
pub const Bytes = owned.Bytes;

pub const Client = @import("client.zig").Client;
pub const Agent = @import("agent.zig").Agent;

const run = @import("run.zig");
pub const Run = run.Run;
pub const Event = run.Event;
pub const EventKind = run.EventKind;
pub const RunStatus = run.Status;
pub const RunResult = run.Result;
pub const Poll = run.Poll;

const tool = @import("tool.zig");
pub const ToolCall = tool.ToolCall;
pub const PendingToolCall = tool.PendingToolCall;
pub const StoreCall = @import("store.zig").StoreCall;

pub const log = @import("log.zig");

/// The library's version, `"MAJOR.MINOR.PATCH"` (static).
pub fn version() [:0]const u8 {
    return std.mem.span(@as([*:0]const u8, @ptrCast(c.cursor_sdk_version())));
}

/// Whether the loaded library is the one the header (and so this build) belongs to.
pub fn versionMatches() bool {
    return c.cursor_sdk_version_number() == c.CURSOR_SDK_VERSION_NUMBER;
}

/// One call: with a process-wide default client, creates an agent, sends `message`, waits for
/// the end and returns the final assistant text (owned). A run that ended with status error or
/// expired is `error.RunFailed`, a cancelled one `error.Cancelled` (`.diag` has the reason).
pub fn prompt(message: [:0]const u8, opts: AgentOptions) Error!String {
    var buf: [options.max_encoded_bytes]u8 = undefined;
    const json = try options.encode(opts, &buf);
    var out: [*c]u8 = null;
    var raw: ?*c.cursor_error = null;
    try errors.check(c.cursor_prompt(message.ptr, json, &out, &raw), raw, opts.diag);
    return String.fromC(out);
}

test {
    std.testing.refAllDecls(@This());
    _ = options;
}
