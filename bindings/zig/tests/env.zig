//! Test environment: bridges from the environment (never skipped: a missing one panics saying
//! why), a fresh directory per test, and the client options the suites use.
const std = @import("std");
const cursor = @import("cursor_sdk");

pub fn need(name: [:0]const u8) [:0]const u8 {
    const v = std.c.getenv(name) orelse
        std.debug.panic("{s} is not set: run the Zig suites through scripts/zig-test.sh (make zig-test)", .{name});
    return std.mem.span(v);
}

pub fn double() [:0]const u8 {
    return need("CURSOR_SDK_TEST_DOUBLE");
}

pub fn realBridge() [:0]const u8 {
    return need("CURSOR_SDK_TEST_REAL_BRIDGE");
}

var counter = std.atomic.Value(u32).init(0);

/// A per-test directory (workspace, HOME and TMPDIR of the bridge) under
/// `$CURSOR_SDK_TEST_TMP`, which the script removes afterwards.
pub const Env = struct {
    dir: [:0]u8,
    home: [:0]u8,
    catalog_env: [3]cursor.EnvVar = undefined,

    pub fn init() !Env {
        const gpa = std.testing.allocator;
        const n = counter.fetchAdd(1, .monotonic);
        const dir = try std.fmt.allocPrintSentinel(gpa, "{s}/t{d}-{d}", .{ need("CURSOR_SDK_TEST_TMP"), std.c.getpid(), n }, 0);
        const home = try std.fmt.allocPrintSentinel(gpa, "{s}/home", .{dir}, 0);
        if (std.c.mkdir(dir, 0o700) != 0 or std.c.mkdir(home, 0o700) != 0) std.debug.panic("cannot create {s}", .{dir});
        return .{ .dir = dir, .home = home };
    }

    pub fn deinit(self: *Env) void {
        std.testing.allocator.free(self.dir);
        std.testing.allocator.free(self.home);
    }

    /// The options of `tests/c/harness.h`: the given bridge, this directory as workspace,
    /// a dummy key, and the double's model catalog.
    pub fn options(self: *Env, bridge: []const u8) cursor.ClientOptions {
        self.catalog_env = .{
            .{ .name = "HOME", .value = self.home },
            .{ .name = "TMPDIR", .value = self.dir },
            .{ .name = "CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON", .value = "[{\"id\":\"composer-2\"}]" },
        };
        return .{ .bridge_path = bridge, .workspace = self.dir, .api_key = "test-key", .bridge_env = &self.catalog_env };
    }
};

/// Milliseconds since `start` (monotonic).
pub fn since(start: std.Io.Timestamp) i64 {
    return start.untilNow(std.testing.io, .awake).toMilliseconds();
}

pub fn now() std.Io.Timestamp {
    return std.Io.Timestamp.now(std.testing.io, .awake);
}

pub fn sleepMs(ms: i64) void {
    std.testing.io.sleep(.fromMilliseconds(ms), .awake) catch {};
}

/// Drains a run, concatenating its assistant text into `text` (caller frees).
pub const Drained = struct {
    text: std.ArrayList(u8) = .empty,
    types: std.ArrayList([]u8) = .empty,
    kinds: [5]usize = .{ 0, 0, 0, 0, 0 },
    failure: ?cursor.Error = null,

    pub fn deinit(self: *Drained) void {
        const gpa = std.testing.allocator;
        for (self.types.items) |t| gpa.free(t);
        self.types.deinit(gpa);
        self.text.deinit(gpa);
    }

    pub fn hasType(self: *const Drained, t: []const u8) bool {
        for (self.types.items) |x| if (std.mem.eql(u8, x, t)) return true;
        return false;
    }
};

pub fn drain(run: *cursor.Run) !Drained {
    const gpa = std.testing.allocator;
    var d: Drained = .{};
    errdefer d.deinit();
    while (true) {
        const ev = run.next(null) catch |e| {
            d.failure = e;
            continue;
        } orelse break;
        defer ev.deinit();
        const k = @intFromEnum(ev.kind());
        if (k < d.kinds.len) d.kinds[k] += 1;
        try d.types.append(gpa, try gpa.dupe(u8, ev.typeName()));
        if (ev.kind() == .message) if (ev.text()) |t| try d.text.appendSlice(gpa, t);
    }
    return d;
}
