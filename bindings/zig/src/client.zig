//! The client: owns (or attaches to) one bridge; creates agents; management and catalog calls.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const options = @import("options.zig");
const owned = @import("owned.zig");
const tool = @import("tool.zig");
const store = @import("store.zig");
const Agent = @import("agent.zig").Agent;
const Error = errors.Error;
const Diagnostics = errors.Diagnostics;
const String = owned.String;

/// A client. Owned: call `deinit` last (after the agents and runs). Thread-safe: its functions
/// may be called from many threads at once.
pub const Client = struct {
    raw: *c.cursor_client,

    /// Creates a client. Does not block unless `.eager = true` (then up to `startup_timeout_ms`).
    /// With no options the bridge is found automatically and the key comes from `CURSOR_API_KEY`.
    pub fn init(opts: options.ClientOptions) Error!Client {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: ?*c.cursor_client = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_new(json, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }

    /// Creates a client whose bridge keeps all local agent state in your store: every store
    /// operation calls `handler(ctx, &call)` on a library thread (possibly concurrently).
    /// `ctx` (a pointer) is borrowed until `deinit` returns.
    pub fn initWithStore(
        opts: options.ClientOptions,
        ctx: anytype,
        comptime handler: fn (@TypeOf(ctx), *store.StoreCall) anyerror!void,
    ) Error!Client {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: ?*c.cursor_client = null;
        var raw: ?*c.cursor_error = null;
        const f = store.trampoline(@TypeOf(ctx), handler);
        try errors.check(c.cursor_client_new_with_store(json, f, tool.toUser(ctx), null, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }

    /// Frees the client and stops the bridge it launched (about 1 s at worst, usually far
    /// less). When it returns no tool or store handler runs. Handles still alive must still be
    /// freed; calls on them fail with `error.Usage`.
    pub fn deinit(self: *Client) void {
        c.cursor_client_free(self.raw);
    }

    /// Starts the bridge now (a no-op when it runs). Blocks up to `startup_timeout_ms`.
    pub fn start(self: *Client, opts: options.Call) Error!void {
        var raw: ?*c.cursor_error = null;
        return errors.check(c.cursor_client_start(self.raw, &raw), raw, opts.diag);
    }

    /// Checks the bridge is up and accepts our token. One RPC.
    pub fn ping(self: *Client, opts: options.Call) Error!void {
        var raw: ?*c.cursor_error = null;
        return errors.check(c.cursor_client_ping(self.raw, &raw), raw, opts.diag);
    }

    /// Stops a launched bridge now; later calls fail with `error.Usage`. Idempotent, any thread.
    pub fn shutdown(self: *Client) void {
        c.cursor_client_shutdown(self.raw);
    }

    /// The bridge's version JSON (`{"bridgeVersion","protocolVersion","capabilities","sdkVersion"}`). Owned.
    pub fn versionJson(self: *Client, opts: options.Call) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_version(self.raw, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    pub const Version = struct {
        bridgeVersion: []const u8 = "",
        protocolVersion: []const u8 = "",
        capabilities: []const []const u8 = &.{},
        /// The cursor-sdk release the bridge ships in (null when attached or unknown).
        sdkVersion: ?[]const u8 = null,
    };

    /// The bridge's version, parsed (copied into `gpa`; free with `deinit`).
    pub fn version(self: *Client, gpa: std.mem.Allocator, opts: options.Call) !std.json.Parsed(Version) {
        const s = try self.versionJson(opts);
        defer s.deinit();
        return s.parse(Version, gpa);
    }

    /// Options of the catalog calls: the API key to ask about (default: the client's).
    pub const CatalogOptions = struct { api_key: ?[:0]const u8 = null, diag: ?*Diagnostics = null };

    /// The account of the API key (`SdkUser` JSON). Needs the Cursor backend. Owned.
    pub fn me(self: *Client, opts: CatalogOptions) Error!String {
        return catalog(c.cursor_client_me, self.raw, opts);
    }

    /// The models the account may use (JSON array of `SdkModel`). Owned.
    pub fn models(self: *Client, opts: CatalogOptions) Error!String {
        return catalog(c.cursor_client_models, self.raw, opts);
    }

    /// The repositories usable with cloud agents (JSON array). Owned.
    pub fn repositories(self: *Client, opts: CatalogOptions) Error!String {
        return catalog(c.cursor_client_repositories, self.raw, opts);
    }

    fn catalog(f: anytype, cl: *c.cursor_client, opts: CatalogOptions) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(f(cl, if (opts.api_key) |k| k.ptr else null, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// Creates an agent (owned: call `deinit`). Local agents' cwd defaults to the workspace.
    /// One RPC (plus the bridge's start on first use).
    pub fn createAgent(self: *Client, opts: options.AgentOptions) Error!Agent {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: ?*c.cursor_agent = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_create(self.raw, json, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }

    /// Re-attaches to an existing agent by id (give the model, and the cwd for agents made
    /// elsewhere). Owned result.
    pub fn resumeAgent(self: *Client, agent_id: [:0]const u8, opts: options.AgentOptions) Error!Agent {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: ?*c.cursor_agent = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_agent_resume(self.raw, agent_id.ptr, json, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }

    /// One agent's metadata (`SdkAgentInfo` JSON). Owned.
    pub fn getAgent(self: *Client, agent_id: [:0]const u8, opts: options.AgentQuery) Error!String {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_get_agent(self.raw, agent_id.ptr, json, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// One page of agents: `{"items":[…],"nextCursor":…}`. Owned.
    pub fn listAgents(self: *Client, opts: options.ListAgentsOptions) Error!String {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_list_agents(self.raw, json, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    pub fn archiveAgent(self: *Client, agent_id: [:0]const u8, opts: options.AgentQuery) Error!void {
        return self.byId(c.cursor_client_archive_agent, agent_id, opts);
    }

    pub fn unarchiveAgent(self: *Client, agent_id: [:0]const u8, opts: options.AgentQuery) Error!void {
        return self.byId(c.cursor_client_unarchive_agent, agent_id, opts);
    }

    /// Deletes an agent and its data (`error.FailedPrecondition` while a run of it is live).
    pub fn deleteAgent(self: *Client, agent_id: [:0]const u8, opts: options.AgentQuery) Error!void {
        return self.byId(c.cursor_client_delete_agent, agent_id, opts);
    }

    fn byId(self: *Client, f: anytype, agent_id: [:0]const u8, opts: options.AgentQuery) Error!void {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var raw: ?*c.cursor_error = null;
        return errors.check(f(self.raw, agent_id.ptr, json, &raw), raw, opts.diag);
    }

    /// One page of an agent's runs: `{"items":[RunSnapshot…],"nextCursor":…}`. Owned. Do not
    /// list while you stream a run of this agent (it detaches the bridge's live handle).
    pub fn listRuns(self: *Client, agent_id: [:0]const u8, opts: options.PageOptions) Error!String {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_list_runs(self.raw, agent_id.ptr, json, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// A run's snapshot (`RunSnapshot` JSON). Owned. Same caveat as `listRuns`.
    pub fn getRun(self: *Client, run_id: [:0]const u8, opts: options.GetRunOptions) Error!String {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_get_run(self.raw, run_id.ptr, json, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// Cancels a run by id (e.g. the stale run of `error.StaleRun`). Up to three RPCs.
    pub fn cancelRun(self: *Client, agent_id: [:0]const u8, run_id: [:0]const u8, opts: options.AgentQuery) Error!void {
        var buf: [options.max_encoded_bytes]u8 = undefined;
        const json = try options.encode(opts, &buf);
        var raw: ?*c.cursor_error = null;
        return errors.check(c.cursor_client_cancel_run(self.raw, agent_id.ptr, run_id.ptr, json, &raw), raw, opts.diag);
    }

    /// A run's conversation document (JSON). Owned.
    pub fn runConversation(self: *Client, run_id: [:0]const u8, opts: options.Call) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_client_run_conversation(self.raw, run_id.ptr, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    pub const ToolOptions = struct {
        description: ?[:0]const u8 = null,
        /// A JSON Schema object (default `{"type":"object"}`).
        input_schema_json: ?[:0]const u8 = null,
        diag: ?*Diagnostics = null,
    };

    /// Registers a tool for every local agent this client creates or resumes from now on.
    /// `handler(ctx, &call)` runs on a library thread, possibly concurrently. `ctx` (a pointer)
    /// is borrowed until the client's `deinit` returns (or a same-name registration replaced
    /// the tool and its calls finished). `name`: 1-64 of `A-Za-z0-9_-`.
    pub fn addTool(
        self: *Client,
        name: [:0]const u8,
        opts: ToolOptions,
        ctx: anytype,
        comptime handler: fn (@TypeOf(ctx), *tool.ToolCall) anyerror!void,
    ) Error!void {
        var raw: ?*c.cursor_error = null;
        const f = tool.trampoline(@TypeOf(ctx), handler);
        const desc = if (opts.description) |d| d.ptr else null;
        const schema = if (opts.input_schema_json) |s| s.ptr else null;
        return errors.check(c.cursor_client_add_tool(self.raw, name.ptr, desc, schema, f, tool.toUser(ctx), null, &raw), raw, opts.diag);
    }
};
