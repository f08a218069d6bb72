//! Library statuses as a Zig error set, and `Diagnostics`: the full error of a failed call.
const std = @import("std");
const c = @import("c");

/// One error per failing library status (`CURSOR_E_*`), plus `Timeout` for the caller's own
/// timeout (`CURSOR_TIMEOUT`: only `Run.next` and `Run.wait` with a finite timeout return it).
pub const Error = error{
    /// `CURSOR_TIMEOUT`: your timeout passed with nothing to report; the run goes on.
    Timeout,
    /// `CURSOR_E_INVALID_ARGUMENT`: a malformed argument or option (the message names the key).
    InvalidArgument,
    /// `CURSOR_E_AUTH`: the API key (or the bridge token) was missing or rejected.
    Auth,
    /// `CURSOR_E_PERMISSION_DENIED`: the account may not do this.
    PermissionDenied,
    /// `CURSOR_E_NOT_FOUND`: the agent, run or artifact does not exist (under that cwd).
    NotFound,
    /// `CURSOR_E_BUSY`: the agent already has an active run this client streams.
    Busy,
    /// `CURSOR_E_RATE_LIMITED`: see `Diagnostics.retryAfterMs` and `rateLimit`.
    RateLimited,
    /// `CURSOR_E_UNAVAILABLE`: the bridge or the Cursor backend is unreachable.
    Unavailable,
    /// `CURSOR_E_BRIDGE_START_FAILED`: no bridge was found, or it failed before it was ready.
    BridgeStartFailed,
    /// `CURSOR_E_BRIDGE_EXITED`: the bridge process exited (the next call starts a new one).
    BridgeExited,
    /// `CURSOR_E_TRANSPORT`: the connection to the bridge failed.
    Transport,
    /// `CURSOR_E_DEADLINE`: the library's own deadline for a bridge call passed
    /// (`request_timeout_ms`, or `stream_idle_timeout_ms` for a silent stream).
    Deadline,
    /// `CURSOR_E_PROTOCOL`: the bridge broke the protocol.
    Protocol,
    /// `CURSOR_E_CANCELLED`: the operation or run was cancelled.
    Cancelled,
    /// `CURSOR_E_INTERNAL`: a bug in the library or the bridge.
    Internal,
    /// `CURSOR_E_UNSUPPORTED`: not supported here (or by the running bridge release).
    Unsupported,
    /// `CURSOR_E_FAILED_PRECONDITION`: the target's state forbids it (archived agent, live run).
    FailedPrecondition,
    /// `CURSOR_E_USAGE`: the API was used wrongly (wrong handle state, second completion…).
    Usage,
    /// `CURSOR_E_RUN_FAILED`: `prompt` only: the run ended with status error or expired.
    RunFailed,
    /// `CURSOR_E_STALE_RUN`: the agent is held by a run no bridge of this client runs;
    /// `Diagnostics.runId` names it (cancel with `Client.cancelRun`, or send with
    /// `.reclaim_stale_runs = true`).
    StaleRun,
    /// A status this binding does not know (a newer library); `Diagnostics.status` has it.
    Unknown,
};

/// The Zig error for a library status; `null` for `CURSOR_OK` and `CURSOR_END`.
pub fn fromStatus(status: c.cursor_status) ?Error {
    return switch (status) {
        c.CURSOR_OK, c.CURSOR_END => null,
        c.CURSOR_TIMEOUT => error.Timeout,
        c.CURSOR_E_INVALID_ARGUMENT => error.InvalidArgument,
        c.CURSOR_E_AUTH => error.Auth,
        c.CURSOR_E_PERMISSION_DENIED => error.PermissionDenied,
        c.CURSOR_E_NOT_FOUND => error.NotFound,
        c.CURSOR_E_BUSY => error.Busy,
        c.CURSOR_E_RATE_LIMITED => error.RateLimited,
        c.CURSOR_E_UNAVAILABLE => error.Unavailable,
        c.CURSOR_E_BRIDGE_START_FAILED => error.BridgeStartFailed,
        c.CURSOR_E_BRIDGE_EXITED => error.BridgeExited,
        c.CURSOR_E_TRANSPORT => error.Transport,
        c.CURSOR_E_DEADLINE => error.Deadline,
        c.CURSOR_E_PROTOCOL => error.Protocol,
        c.CURSOR_E_CANCELLED => error.Cancelled,
        c.CURSOR_E_INTERNAL => error.Internal,
        c.CURSOR_E_UNSUPPORTED => error.Unsupported,
        c.CURSOR_E_FAILED_PRECONDITION => error.FailedPrecondition,
        c.CURSOR_E_USAGE => error.Usage,
        c.CURSOR_E_RUN_FAILED => error.RunFailed,
        c.CURSOR_E_STALE_RUN => error.StaleRun,
        else => error.Unknown,
    };
}

/// The full error of a failed call. Pass `&diag` as an options struct's `.diag` (or read
/// `Run.diagnostics`). Initialise it as `.{}`; every call it is passed to replaces (and frees)
/// what it held: the error on failure, nothing on success. Its strings are borrowed from the
/// library's error object and live until the next such call or `deinit`.
pub const Diagnostics = struct {
    /// The library's error object (owned; freed by `deinit`), when the library made one.
    raw: ?*c.cursor_error = null,
    /// The status of the failed call (`CURSOR_E_*`), 0 when the last call succeeded.
    status: c.cursor_status = c.CURSOR_OK,
    /// A message from the binding itself (static), when it refused before calling the library.
    note: ?[:0]const u8 = null,

    pub fn deinit(self: *Diagnostics) void {
        c.cursor_error_free(self.raw);
        self.* = .{};
    }

    /// The Zig error of the failed call, or `null` after a success.
    pub fn err(self: *const Diagnostics) ?Error {
        return fromStatus(self.status);
    }

    /// `"<kind>: <text>"`, plus the request id when there is one; `""` after a success.
    pub fn message(self: *const Diagnostics) [:0]const u8 {
        if (self.note) |n| return n;
        return span(c.cursor_error_message(self.raw)) orelse "";
    }

    /// The Connect code the bridge sent (`"not_found"`…), or null.
    pub fn connectCode(self: *const Diagnostics) ?[:0]const u8 {
        return span(c.cursor_error_connect_code(self.raw));
    }

    /// The bridge's `SdkErrorCode` (0 when absent).
    pub fn sdkCode(self: *const Diagnostics) i32 {
        return c.cursor_error_sdk_code(self.raw);
    }

    /// The request id from Cursor Cloud, or null.
    pub fn requestId(self: *const Diagnostics) ?[:0]const u8 {
        return span(c.cursor_error_request_id(self.raw));
    }

    /// How long to wait before retrying, when the bridge said.
    pub fn retryAfterMs(self: *const Diagnostics) ?u64 {
        const ms = c.cursor_error_retry_after_ms(self.raw);
        return if (ms < 0) null else @intCast(ms);
    }

    /// The run the error is about (for `error.StaleRun`: the run holding the agent), or null.
    pub fn runId(self: *const Diagnostics) ?[:0]const u8 {
        return span(c.cursor_error_run_id(self.raw));
    }

    /// A documentation or remediation link, or null.
    pub fn helpUrl(self: *const Diagnostics) ?[:0]const u8 {
        return span(c.cursor_error_help_url(self.raw));
    }

    /// The upstream provider when the failure came from outside Cursor, or null.
    pub fn provider(self: *const Diagnostics) ?[:0]const u8 {
        return span(c.cursor_error_provider(self.raw));
    }

    /// The HTTP status of the response that carried the error (0: no response).
    pub fn httpStatus(self: *const Diagnostics) i32 {
        return c.cursor_error_http_status(self.raw);
    }

    /// Whether retrying the same call may succeed.
    pub fn retryable(self: *const Diagnostics) bool {
        return c.cursor_error_retryable(self.raw);
    }

    pub const RateLimit = struct { limit: ?u64, remaining: ?u64, reset_epoch_seconds: ?u64 };

    /// Rate-limit details, when the error carries them.
    pub fn rateLimit(self: *const Diagnostics) ?RateLimit {
        var limit: u64 = 0;
        var remaining: u64 = 0;
        var reset: u64 = 0;
        if (!c.cursor_error_rate_limit(self.raw, &limit, &remaining, &reset)) return null;
        const known = struct {
            fn f(v: u64) ?u64 {
                return if (v == std.math.maxInt(u64)) null else v;
            }
        }.f;
        return .{ .limit = known(limit), .remaining = known(remaining), .reset_epoch_seconds = known(reset) };
    }

    /// Prints the message (for `{f}` in format strings).
    pub fn format(self: *const Diagnostics, w: *std.Io.Writer) std.Io.Writer.Error!void {
        try w.writeAll(self.message());
    }
};

/// A C string as a slice, or null.
pub fn span(p: [*c]const u8) ?[:0]const u8 {
    return if (p == null) null else std.mem.span(@as([*:0]const u8, @ptrCast(p)));
}

/// Turns a call's status and error object into `Error!void`, handing the error object to
/// `diag` (or freeing it).
pub fn check(status: c.cursor_status, raw: ?*c.cursor_error, diag: ?*Diagnostics) Error!void {
    if (diag) |d| {
        d.deinit();
        if (fromStatus(status) != null) {
            d.raw = raw;
            d.status = status;
        } else c.cursor_error_free(raw);
    } else c.cursor_error_free(raw);
    if (fromStatus(status)) |e| return e;
}

/// A failure found by the binding before the library was called.
pub fn refuse(diag: ?*Diagnostics, status: c.cursor_status, note: [:0]const u8) Error {
    if (diag) |d| {
        d.deinit();
        d.status = status;
        d.note = note;
    }
    return fromStatus(status).?;
}
