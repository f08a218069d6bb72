//! Custom tools (the double makes the calls) and a custom store (the real bridge uses it).
const std = @import("std");
const cursor = @import("cursor_sdk");
const env = @import("env.zig");
const testing = std.testing;

const Echo = struct {
    calls: std.atomic.Value(u32) = .init(0),
    fail_index: ?f64 = null,
    late: bool = false,
    threads: [8]?std.Thread = @splat(null),

    fn handle(self: *Echo, call: *cursor.ToolCall) !void {
        const n = self.calls.fetchAdd(1, .monotonic);
        const Args = struct { input: ?[]const u8 = null, i: ?f64 = null };
        const args = try call.parseArgs(Args, testing.allocator);
        defer args.deinit();
        if (self.fail_index != null and args.value.i == self.fail_index) return error.ToolRefused;
        if (self.late) {
            // Answer from another thread, after the handler returned.
            self.threads[n] = try std.Thread.spawn(.{}, answerLater, .{call.keep()});
            return;
        }
        try call.complete(call.args());
        // exactly once: a second answer is a typed error, not a crash
        if (call.complete("{}")) |_| return error.SecondAnswerAccepted else |e| if (e != error.Usage) return e;
    }

    fn answerLater(pending: cursor.PendingToolCall) void {
        var p = pending;
        defer p.deinit();
        env.sleepMs(50);
        p.complete("{\"late\":true}") catch |e| std.debug.panic("late completion failed: {t}", .{e});
    }

    fn join(self: *Echo) void {
        for (&self.threads) |*t| if (t.*) |th| {
            th.join();
            t.* = null;
        };
    }
};

fn toolEvents(run: *cursor.Run, completed: *usize, failed: *usize, text: *std.ArrayList(u8)) !void {
    while (try run.next(10_000)) |ev| {
        defer ev.deinit();
        if (std.mem.eql(u8, ev.typeName(), "tool_call")) {
            if (std.mem.indexOf(u8, ev.json(), "\"completed\"") != null) completed.* += 1;
            // an error result reaches the model as content flagged isError
            if (std.mem.indexOf(u8, ev.json(), "\"isError\":true") != null) failed.* += 1;
        }
        if (ev.text()) |t| try text.appendSlice(testing.allocator, t);
    }
}

test "tools: a Zig function with a context answers the model" {
    var e = try env.Env.init();
    defer e.deinit();
    var echo: Echo = .{};
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    try client.addTool("echo", .{ .description = "Echoes its input" }, &echo, Echo.handle);
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:tool:echo", .{});
    defer run.deinit();
    var completed: usize = 0;
    var failed: usize = 0;
    var text: std.ArrayList(u8) = .empty;
    defer text.deinit(testing.allocator);
    try toolEvents(&run, &completed, &failed, &text);
    try testing.expectEqual(@as(u32, 1), echo.calls.load(.monotonic));
    try testing.expectEqual(@as(usize, 1), completed);
    try testing.expectEqual(@as(usize, 0), failed);
    try testing.expect(std.mem.indexOf(u8, text.items, "input") != null);
    try testing.expectEqual(cursor.RunStatus.finished, run.status());
}

test "tools: a handler's error becomes an error result the model sees; the run goes on" {
    var e = try env.Env.init();
    defer e.deinit();
    var echo: Echo = .{ .fail_index = 1 };
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    try client.addTool("echo", .{}, &echo, Echo.handle);
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:tools:3", .{});
    defer run.deinit();
    var completed: usize = 0;
    var failed: usize = 0;
    var text: std.ArrayList(u8) = .empty;
    defer text.deinit(testing.allocator);
    try toolEvents(&run, &completed, &failed, &text);
    try testing.expectEqual(@as(u32, 3), echo.calls.load(.monotonic));
    try testing.expectEqual(@as(usize, 1), failed);
    try testing.expect(std.mem.indexOf(u8, text.items, "ToolRefused") != null);
    try testing.expectEqual(cursor.RunStatus.finished, run.status());
}

test "tools: late completion from another thread" {
    var e = try env.Env.init();
    defer e.deinit();
    var echo: Echo = .{ .late = true };
    defer echo.join();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    try client.addTool("echo", .{}, &echo, Echo.handle);
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:tools:2", .{});
    defer run.deinit();
    var completed: usize = 0;
    var failed: usize = 0;
    var text: std.ArrayList(u8) = .empty;
    defer text.deinit(testing.allocator);
    try toolEvents(&run, &completed, &failed, &text);
    echo.join();
    try testing.expectEqual(@as(usize, 2), completed);
    try testing.expect(std.mem.indexOf(u8, text.items, "late") != null);
}

/// An in-memory agents substore (the rest answers null or echoes the row).
const MemoryStore = struct {
    lock: std.Io.Mutex = .init,
    rows: std.StringHashMapUnmanaged([:0]u8) = .empty,
    calls: std.atomic.Value(u32) = .init(0),
    fail_create: bool = false,

    fn deinit(self: *MemoryStore) void {
        var it = self.rows.iterator();
        while (it.next()) |kv| {
            testing.allocator.free(kv.key_ptr.*);
            testing.allocator.free(kv.value_ptr.*);
        }
        self.rows.deinit(testing.allocator);
    }

    fn handle(self: *MemoryStore, call: *cursor.StoreCall) !void {
        const gpa = testing.allocator;
        _ = self.calls.fetchAdd(1, .monotonic);
        self.lock.lockUncancelable(testing.io);
        defer self.lock.unlock(testing.io);
        const input = try std.json.parseFromSlice(std.json.Value, gpa, call.input, .{});
        defer input.deinit();
        const is = struct {
            fn f(a: []const u8, b: []const u8) bool {
                return std.mem.eql(u8, a, b);
            }
        }.f;
        const agents = is(call.substore, "agents");
        if (agents and (is(call.method, "create") or is(call.method, "update"))) {
            if (self.fail_create and is(call.method, "create")) return error.DiskOnFire;
            const agent = input.value.object.get("agent") orelse return error.NoAgent;
            const id = agent.object.get("agentId").?.string;
            const row = try std.json.Stringify.valueAlloc(gpa, agent, .{});
            defer gpa.free(row);
            const rowz = try gpa.dupeSentinel(u8, row, 0);
            const gop = try self.rows.getOrPut(gpa, id);
            if (gop.found_existing) gpa.free(gop.value_ptr.*) else gop.key_ptr.* = try gpa.dupe(u8, id);
            gop.value_ptr.* = rowz;
            return call.ok(rowz);
        }
        if (agents and is(call.method, "get")) {
            const id = input.value.object.get("agentId").?.string;
            return call.ok(self.rows.get(id));
        }
        if (agents and is(call.method, "list")) {
            var out: std.Io.Writer.Allocating = .init(gpa);
            defer out.deinit();
            try out.writer.writeAll("{\"items\":[");
            var it = self.rows.valueIterator();
            var first = true;
            while (it.next()) |v| : (first = false) {
                if (!first) try out.writer.writeByte(',');
                try out.writer.writeAll(v.*);
            }
            try out.writer.writeAll("]}");
            const z = try gpa.dupeSentinel(u8, out.written(), 0);
            defer gpa.free(z);
            return call.ok(z);
        }
        if (is(call.method, "list")) return call.ok("{\"items\":[]}");
        if (is(call.substore, "runs") and (is(call.method, "create") or is(call.method, "update"))) {
            const row = try std.json.Stringify.valueAlloc(gpa, input.value.object.get("run").?, .{});
            defer gpa.free(row);
            const z = try gpa.dupeSentinel(u8, row, 0);
            defer gpa.free(z);
            return call.ok(z);
        }
        return call.ok(null);
    }
};

test "store: the real bridge keeps its agents in a Zig store" {
    var e = try env.Env.init();
    defer e.deinit();
    var store: MemoryStore = .{};
    defer store.deinit();
    var client = try cursor.Client.initWithStore(e.options(env.realBridge()), &store, MemoryStore.handle);
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2", .name = "kept-in-zig" });
    defer agent.deinit();
    try testing.expect(store.rows.get(agent.id()) != null);
    const info = try agent.info(.{});
    defer info.deinit();
    try testing.expect(std.mem.indexOf(u8, info.slice(), "kept-in-zig") != null);
    const page = try client.listAgents(.{});
    defer page.deinit();
    try testing.expect(std.mem.indexOf(u8, page.slice(), agent.id()) != null);
    try agent.archive(.{});
    try testing.expect(store.calls.load(.monotonic) >= 8);
}

test "store: a handler's error is a clear error of the agent operation" {
    var e = try env.Env.init();
    defer e.deinit();
    var store: MemoryStore = .{ .fail_create = true };
    defer store.deinit();
    var client = try cursor.Client.initWithStore(e.options(env.realBridge()), &store, MemoryStore.handle);
    defer client.deinit();
    var diag: cursor.Diagnostics = .{};
    defer diag.deinit();
    try testing.expectError(error.Internal, client.createAgent(.{ .model = "composer-2", .diag = &diag }));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "DiskOnFire") != null);
}
