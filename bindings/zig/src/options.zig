//! Options as Zig structs, serialised with `std.json` into a stack buffer (no heap).
//!
//! Every options struct has two fields of the binding's own that are never serialised:
//! `diag` (receives the full error of a failure) and `json` (raw JSON text used verbatim
//! instead of the fields: the escape hatch for anything the structs do not model). Fields left
//! `null` are omitted, so the library's defaults apply. Field names are snake_case, which the
//! library accepts everywhere.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const Diagnostics = errors.Diagnostics;

/// Capacity of the stack buffer options are encoded into; larger options go through `.json`.
pub const max_encoded_bytes = 16 * 1024;

/// JSON text embedded as it is (e.g. `.mcp_servers = .{ .text = "{…}" }`).
pub const RawJson = struct {
    text: []const u8,

    pub fn jsonStringify(self: RawJson, jw: anytype) !void {
        try jw.beginWriteRaw();
        try jw.writer.writeAll(self.text);
        jw.endWriteRaw();
    }
};

/// One environment variable for `ClientOptions.bridge_env`.
pub const EnvVar = struct { name: []const u8, value: []const u8 };

/// Options of a call that takes none besides the diagnostics.
pub const Call = struct {
    diag: ?*Diagnostics = null,
};

/// `Client.init` options (every field optional; see `cursor_client_new` in the header).
pub const ClientOptions = struct {
    /// The bridge executable (default: `CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`).
    bridge_path: ?[]const u8 = null,
    /// The bridge's workspace and the default cwd of local agents (default: the current dir).
    workspace: ?[]const u8 = null,
    /// The Cursor API key (default: `CURSOR_API_KEY`).
    api_key: ?[]const u8 = null,
    /// Attach to a running bridge (with `bridge_token`) instead of launching one.
    bridge_url: ?[]const u8 = null,
    bridge_token: ?[]const u8 = null,
    startup_timeout_ms: ?u32 = null,
    request_timeout_ms: ?u32 = null,
    stream_idle_timeout_ms: ?u32 = null,
    max_frame_bytes: ?u32 = null,
    max_retries: ?u8 = null,
    tool_timeout_ms: ?u32 = null,
    verbose: ?bool = null,
    /// Start the bridge in `init` instead of on first use.
    eager: ?bool = null,
    /// `{"type":"sqlite"}` (default), `{"type":"jsonl","rootDir":…}`; custom stores: `Client.initWithStore`.
    local_store: ?RawJson = null,
    /// Extra environment variables for a launched bridge.
    bridge_env: ?[]const EnvVar = null,
    bridge_args: ?[]const []const u8 = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

/// Agent options for `Client.createAgent`, `Client.resumeAgent` and `prompt`.
pub const AgentOptions = struct {
    /// The model id, e.g. `"composer-2"`.
    model: ?[]const u8 = null,
    /// The local agent's working directory (relative paths resolve against the process's cwd).
    cwd: ?[]const u8 = null,
    name: ?[]const u8 = null,
    api_key: ?[]const u8 = null,
    /// `LocalAgentOptions` JSON (`settingSources`, `dirs`, …).
    local: ?RawJson = null,
    /// `CloudAgentOptions` JSON: makes a cloud agent.
    cloud: ?RawJson = null,
    /// MCP servers by name (JSON object).
    mcp_servers: ?RawJson = null,
    /// Sub-agents by name (JSON object).
    agents: ?RawJson = null,
    /// Built-in tool names the agent may use.
    tools: ?[]const []const u8 = null,
    disallowed_tools: ?[]const []const u8 = null,
    /// Makes a cloud create safe to retry.
    idempotency_key: ?[]const u8 = null,
    /// Every send of this handle takes the agent over from a stale run.
    reclaim_stale_runs: ?bool = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

pub const Mode = enum { agent, plan };

/// `Agent.send` options.
pub const SendOptions = struct {
    /// The model for this and later sends.
    model: ?[]const u8 = null,
    mode: ?Mode = null,
    mcp_servers: ?RawJson = null,
    /// `LocalSendOptions` JSON (e.g. `{"force":true}`).
    local: ?RawJson = null,
    /// `CloudSendOptions` JSON (e.g. `{"envVars":{…}}`).
    cloud: ?RawJson = null,
    /// Stream interaction updates (`"text-delta"`, …) as `.delta` events.
    enable_deltas: ?bool = null,
    /// Stream conversation steps as `.step` events.
    enable_steps: ?bool = null,
    idempotency_key: ?[]const u8 = null,
    /// Cancel a stale run holding the agent and send again.
    reclaim_stale_runs: ?bool = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

pub const Runtime = enum { local, cloud };

/// `Client.listAgents` options.
pub const ListAgentsOptions = struct {
    limit: ?u32 = null,
    /// A previous page's `nextCursor`.
    cursor: ?[]const u8 = null,
    runtime: ?Runtime = null,
    cwd: ?[]const u8 = null,
    pr_url: ?[]const u8 = null,
    include_archived: ?bool = null,
    api_key: ?[]const u8 = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

/// `Client.listRuns` and `Agent.messages` options.
pub const PageOptions = struct {
    limit: ?u32 = null,
    cursor: ?[]const u8 = null,
    offset: ?u32 = null,
    runtime: ?Runtime = null,
    cwd: ?[]const u8 = null,
    api_key: ?[]const u8 = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

/// Options of the management calls by agent id (`getAgent`, `archiveAgent`, …, `cancelRun`).
pub const AgentQuery = struct {
    /// Where the agent's store lives (default: the client's workspace).
    cwd: ?[]const u8 = null,
    api_key: ?[]const u8 = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

/// `Client.getRun` options.
pub const GetRunOptions = struct {
    runtime: ?Runtime = null,
    cwd: ?[]const u8 = null,
    agent_id: ?[]const u8 = null,
    api_key: ?[]const u8 = null,
    json: ?[:0]const u8 = null,
    diag: ?*Diagnostics = null,
};

/// Serialises `opts` into `buf` as NUL-terminated JSON; null when nothing is set (the
/// library's defaults). `opts.json`, when set, is returned as it is.
pub fn encode(opts: anytype, buf: []u8) errors.Error!?[*:0]const u8 {
    if (opts.json) |j| return j.ptr;
    var w: std.Io.Writer = .fixed(buf);
    var any = false;
    writeObject(opts, &w, &any) catch
        return errors.refuse(opts.diag, c.CURSOR_E_INVALID_ARGUMENT, "invalid_argument: options exceed the binding's 16 KiB encoding buffer; pass them as raw JSON through `.json`");
    if (!any) return null;
    return @ptrCast(w.buffered().ptr);
}

fn writeObject(opts: anytype, w: *std.Io.Writer, any: *bool) !void {
    var jw: std.json.Stringify = .{ .writer = w, .options = .{ .emit_null_optional_fields = false } };
    try jw.beginObject();
    inline for (@typeInfo(@TypeOf(opts)).@"struct".field_names) |name| {
        if (comptime std.mem.eql(u8, name, "json") or std.mem.eql(u8, name, "diag")) continue;
        if (@field(opts, name)) |v| {
            any.* = true;
            try jw.objectField(name);
            if (@TypeOf(v) == []const EnvVar) {
                try jw.beginObject();
                for (v) |e| {
                    try jw.objectField(e.name);
                    try jw.write(e.value);
                }
                try jw.endObject();
            } else try jw.write(v);
        }
    }
    try jw.endObject();
    try w.writeByte(0);
}

test "options: null fields are omitted, names are snake_case, nothing set gives null" {
    var buf: [max_encoded_bytes]u8 = undefined;
    try std.testing.expectEqual(@as(?[*:0]const u8, null), try encode(AgentOptions{}, &buf));
    const s = (try encode(AgentOptions{ .model = "composer-2", .reclaim_stale_runs = true, .mcp_servers = .{ .text = "{\"a\":{}}" } }, &buf)).?;
    try std.testing.expectEqualStrings(
        \\{"model":"composer-2","mcp_servers":{"a":{}},"reclaim_stale_runs":true}
    , std.mem.span(s));
    const e = (try encode(ClientOptions{ .bridge_env = &.{.{ .name = "HOME", .value = "/h\"" }}, .eager = false }, &buf)).?;
    try std.testing.expectEqualStrings(
        \\{"eager":false,"bridge_env":{"HOME":"/h\""}}
    , std.mem.span(e));
    const m = (try encode(SendOptions{ .mode = .plan }, &buf)).?;
    try std.testing.expectEqualStrings("{\"mode\":\"plan\"}", std.mem.span(m));
}

test "options: the raw JSON escape hatch is passed through; oversized options are a typed error" {
    var buf: [max_encoded_bytes]u8 = undefined;
    const raw = (try encode(SendOptions{ .json = "{\"enableDeltas\":true}", .model = "ignored" }, &buf)).?;
    try std.testing.expectEqualStrings("{\"enableDeltas\":true}", std.mem.span(raw));
    const big: [max_encoded_bytes + 1]u8 = @splat('x');
    var d: Diagnostics = .{};
    defer d.deinit();
    try std.testing.expectError(error.InvalidArgument, encode(AgentOptions{ .name = &big, .diag = &d }, &buf));
    try std.testing.expect(std.mem.indexOf(u8, d.message(), ".json") != null);
}
