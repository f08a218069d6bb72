//! A run: its events (blocking, polling or through a descriptor), result, cancel.
const std = @import("std");
const c = @import("c");
const errors = @import("errors.zig");
const owned = @import("owned.zig");
const Error = errors.Error;
const Diagnostics = errors.Diagnostics;
const String = owned.String;

/// A run's status (`cursor_run_status_t`; non-exhaustive: later libraries may add values).
pub const Status = enum(c.cursor_run_status_t) {
    invalid = c.CURSOR_RUN_INVALID,
    running = c.CURSOR_RUN_RUNNING,
    finished = c.CURSOR_RUN_FINISHED,
    /// The run ended with an error.
    err = c.CURSOR_RUN_ERROR,
    cancelled = c.CURSOR_RUN_CANCELLED,
    expired = c.CURSOR_RUN_EXPIRED,
    _,
};

/// What an event carries (`cursor_event_kind_t`; non-exhaustive).
pub const EventKind = enum(c.cursor_event_kind_t) {
    invalid = c.CURSOR_EVENT_INVALID,
    /// An `sdk_message`: `typeName` is "assistant", "status", "tool_call", "thinking", …
    message = c.CURSOR_EVENT_MESSAGE,
    /// An interaction update (with `.enable_deltas`): "text-delta", …
    delta = c.CURSOR_EVENT_DELTA,
    /// A conversation step (with `.enable_steps`).
    step = c.CURSOR_EVENT_STEP,
    /// The run's result ("result").
    result = c.CURSOR_EVENT_RESULT,
    _,
};

/// One event of a run. Owned: call `deinit`. Its strings are borrowed until then. Safe to read
/// from any thread.
pub const Event = struct {
    raw: *c.cursor_event,

    pub fn deinit(self: Event) void {
        c.cursor_event_free(self.raw);
    }

    pub fn kind(self: Event) EventKind {
        return @enumFromInt(c.cursor_event_kind(self.raw));
    }

    /// "assistant", "status", "tool_call", "text-delta", "result", … Borrowed until `deinit`.
    pub fn typeName(self: Event) [:0]const u8 {
        return errors.span(c.cursor_event_type(self.raw)) orelse "";
    }

    /// The payload as JSON text (snake_case keys inside messages). Borrowed until `deinit`.
    pub fn json(self: Event) [:0]const u8 {
        return errors.span(c.cursor_event_json(self.raw)) orelse "";
    }

    /// The assistant text this event carries (an "assistant" message or a "text-delta"), or
    /// null. Borrowed until `deinit`.
    pub fn text(self: Event) ?[:0]const u8 {
        return errors.span(c.cursor_event_text(self.raw));
    }

    /// The event's resume offset (for `Run.observe`), or null. Borrowed until `deinit`.
    pub fn offset(self: Event) ?[:0]const u8 {
        return errors.span(c.cursor_event_offset(self.raw));
    }

    /// Parses the payload into `T`, copying into `gpa` (unknown fields ignored).
    pub fn parse(self: Event, comptime T: type, gpa: std.mem.Allocator) !std.json.Parsed(T) {
        return std.json.parseFromSlice(T, gpa, self.json(), .{ .ignore_unknown_fields = true, .allocate = .alloc_always });
    }
};

/// What `Run.poll` found.
pub const Poll = union(enum) {
    /// An event (owned: call `deinit`).
    event: Event,
    /// Nothing yet: wait for `Run.fd` to become readable (or poll again next frame).
    pending,
    /// The stream is over.
    end,
};

/// The run's result (the JSON of `Run.wait`), for `Run.result`.
pub const Result = struct {
    runId: []const u8 = "",
    agentId: []const u8 = "",
    /// "finished", "error", "cancelled" or "expired".
    status: []const u8 = "",
    text: ?[]const u8 = null,
    model: ?[]const u8 = null,
    durationMs: ?u64 = null,
    errorCode: ?[]const u8 = null,
    errorMessage: ?[]const u8 = null,
};

/// A live run. Owned: call `deinit` (which stops reading but does not cancel: call `cancel`
/// first for that). Consume it from one thread at a time; `cancel`, `status` and `id` are
/// safe from any thread.
pub const Run = struct {
    raw: *c.cursor_run,
    /// The stream's failure, once `next`, `poll` or `wait` returned it (an error is reported
    /// once; the stream then ends). Owned by the run until `deinit`.
    diagnostics: Diagnostics = .{},

    /// Stops reading and frees the handle (never waits for the network).
    pub fn deinit(self: *Run) void {
        c.cursor_run_free(self.raw);
        self.diagnostics.deinit();
    }

    /// The run id. Borrowed until `deinit`; `""` before the bridge named the run.
    pub fn id(self: *const Run) [:0]const u8 {
        return errors.span(c.cursor_run_id(self.raw)) orelse "";
    }

    /// The latest status seen on the stream. Safe from any thread.
    pub fn status(self: *const Run) Status {
        return @enumFromInt(c.cursor_run_status(self.raw));
    }

    /// The next event: waits up to `timeout_ms` (null: as long as it takes, bounded by the
    /// library's stream guarantees). Returns null when the stream is over, `error.Timeout` when
    /// `timeout_ms` passed with nothing, or the stream's failure (once; details in
    /// `diagnostics`; null follows). The event is owned: call its `deinit`.
    pub fn next(self: *Run, timeout_ms: ?u31) Error!?Event {
        var ev: ?*c.cursor_event = null;
        var raw: ?*c.cursor_error = null;
        const st = c.cursor_run_next_event(self.raw, if (timeout_ms) |t| t else -1, &ev, &raw);
        if (st == c.CURSOR_END) return null;
        if (st == c.CURSOR_TIMEOUT) return error.Timeout;
        try errors.check(st, raw, &self.diagnostics);
        return .{ .raw = ev.? };
    }

    /// Takes an event if one is ready. Never blocks (safe in a frame loop).
    pub fn poll(self: *Run) Error!Poll {
        const ev = self.next(0) catch |e| switch (e) {
            error.Timeout => return .pending,
            else => return e,
        };
        return if (ev) |e| .{ .event = e } else .end;
    }

    /// A descriptor that becomes readable when the run has events or has ended, for
    /// `std.posix.poll`/epoll loops: when readable, `poll` until `.pending` (which re-arms it)
    /// or `.end`. Owned by the run (do not close it); null where unsupported (Windows).
    pub fn fd(self: *Run) ?std.posix.fd_t {
        const f = c.cursor_run_wait_fd(self.raw);
        return if (f < 0) null else f;
    }

    /// Waits for the end (consuming the remaining events) and returns the result JSON
    /// (`{"runId","agentId","status",…}`; owned). A failed, cancelled or expired run is still a
    /// success here: read `status`. `error.Timeout` when `timeout_ms` passed first.
    pub fn wait(self: *Run, timeout_ms: ?u31) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        const st = c.cursor_run_wait(self.raw, if (timeout_ms) |t| t else -1, &out, &raw);
        if (st == c.CURSOR_TIMEOUT) return error.Timeout;
        try errors.check(st, raw, &self.diagnostics);
        return String.fromC(out);
    }

    /// `wait`, parsed into `Result` (strings copied into `gpa`; free with `deinit`).
    pub fn result(self: *Run, gpa: std.mem.Allocator, timeout_ms: ?u31) !std.json.Parsed(Result) {
        const s = try self.wait(timeout_ms);
        defer s.deinit();
        return s.parse(Result, gpa);
    }

    /// Cancels the run. Never blocks (safe in a frame loop and from any thread); the stream
    /// then ends with status cancelled. Idempotent.
    pub fn cancel(self: *Run) Error!void {
        var raw: ?*c.cursor_error = null;
        return errors.check(c.cursor_run_cancel(self.raw, &raw), raw, null);
    }

    /// The assistant text so far (the final text once the run ended). Owned.
    pub fn text(self: *Run, opts: struct { diag: ?*Diagnostics = null }) Error!String {
        var out: [*c]u8 = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_run_text(self.raw, &out, &raw), raw, opts.diag);
        return String.fromC(out);
    }

    /// Opens the run's durable stream after `after_offset` (null: from the start) as a new,
    /// owned run.
    pub fn observe(self: *Run, after_offset: ?[:0]const u8, opts: struct { diag: ?*Diagnostics = null }) Error!Run {
        var out: ?*c.cursor_run = null;
        var raw: ?*c.cursor_error = null;
        try errors.check(c.cursor_run_observe(self.raw, if (after_offset) |o| o.ptr else null, &out, &raw), raw, opts.diag);
        return .{ .raw = out.? };
    }
};
