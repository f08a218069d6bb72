//! An agent: send messages, manage it.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const options = @import("options.zig");
const owned = @import("owned.zig");
const Run = @import("run.zig").Run;
const Error = errors.Error;
const Diagnostics = errors.Diagnostics;
const String = owned.String;

/// An agent handle. Owned: call `deinit` (before the client's; the agent itself lives on in
/// the bridge). Its functions may be called from several threads.
pub const Agent = struct {
    raw: *c.cursor_agent,

    /// Frees the handle. Runs from this agent stay valid.
    pub fn deinit(self: *Agent) void {
        c.cursor_agent_free(self.raw);
    }

    /// The agent's id. Borrowed until `deinit`.
    pub fn id(self: *const Agent) [:0]const u8 {
        return errors.span(c.cursor_agent_id(self.raw)) orelse "";
    }

    /// Sends a message (plain text, or a `UserMessage` JSON object) and returns the live run
    /// once its stream is open (owned: call `deinit`). Blocks for the stream's opening, bounded
    /// by `request_timeout_ms`. A busy agent is `error.Busy`, a stale run `error.StaleRun`.
    pub fn send(self: *Agent, message: [:0]const u8, opts: options.SendOptions) Error!Run {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: ?*c.cursor_run = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_send(self.raw, message.ptr, json, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }

    /// Releases the bridge's in-memory agent (resume brings it back). One RPC.
    pub fn close(self: *Agent, opts: options.Call) Error!void {
        return unary(c.cursor_agent_close, self.raw, opts.diag);
    }

    /// Reloads the agent's durable state. One RPC.
    pub fn reload(self: *Agent, opts: options.Call) Error!void {
        return unary(c.cursor_agent_reload, self.raw, opts.diag);
    }

    pub fn archive(self: *Agent, opts: options.Call) Error!void {
        return unary(c.cursor_agent_archive, self.raw, opts.diag);
    }

    pub fn unarchive(self: *Agent, opts: options.Call) Error!void {
        return unary(c.cursor_agent_unarchive, self.raw, opts.diag);
    }

    /// Deletes the agent and its durable data (`error.FailedPrecondition` while a run is live).
    pub fn delete(self: *Agent, opts: options.Call) Error!void {
        return unary(c.cursor_agent_delete, self.raw, opts.diag);
    }

    /// The agent's metadata (`SdkAgentInfo` JSON). Owned.
    pub fn info(self: *Agent, opts: options.Call) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_info(self.raw, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// The agent's messages (JSON array of `AgentMessage`). Owned.
    pub fn messages(self: *Agent, opts: options.PageOptions) Error!String {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_messages(self.raw, json, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// The agent's artifacts (JSON array of `{path,sizeBytes,updatedAt}`). Owned.
    pub fn artifacts(self: *Agent, opts: options.Call) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_artifacts(self.raw, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// Token usage and cost (`AgentUsage` JSON), of one run when `run_id` is set. Owned.
    pub fn usage(self: *Agent, opts: struct { run_id: ?[:0]const u8 = null, diag: ?*Diagnostics = null }) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_usage(self.raw, if (opts.run_id) |r| r.ptr else null, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// Downloads an artifact. Owned bytes.
    pub fn downloadArtifact(self: *Agent, path: [:0]const u8, opts: options.Call) Error!owned.Bytes {
        var data: [*c]u8 = null;
        var len: usize = 0;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_download_artifact(self.raw, path.ptr, &data, &len, &raw), raw, opts.diag);
        return .{ .ptr = data, .len = len };
    }

    fn unary(f: anytype, a: *c.cursor_agent, diag: ?*Diagnostics) Error!void {
        var raw: ?*c.cursor_error = null;
        return errors.check(f(a, &raw), raw, diag);
    }
};
