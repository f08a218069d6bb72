const std = @import("std");
const cursor = @import("cursor_sdk");
const env = @import("env.zig");
const testing = std.testing;

test "double: streamed text and the run's result" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("Say hello", .{});
    defer run.deinit();
    try testing.expect(run.id().len > 0);
    var d = try env.drain(&run);
    defer d.deinit();
    try testing.expectEqualStrings("Hello from the bridge double.", d.text.items);
    try testing.expectEqual(@as(?cursor.Error, null), d.failure);
    try testing.expectEqual(cursor.RunStatus.finished, run.status());
    const res = try run.result(testing.allocator, null);
    defer res.deinit();
    try testing.expectEqualStrings("finished", res.value.status);
    try testing.expectEqualStrings("Hello from the bridge double.", res.value.text.?);
    try testing.expectEqualStrings(run.id(), res.value.runId);
    try testing.expectEqualStrings(agent.id(), res.value.agentId);
}

test "double: every event kind, with deltas and steps" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("Say hello", .{ .enable_deltas = true, .enable_steps = true });
    defer run.deinit();
    var d = try env.drain(&run);
    defer d.deinit();
    const k = d.kinds;
    try testing.expect(k[@intFromEnum(cursor.EventKind.message)] > 0);
    try testing.expect(k[@intFromEnum(cursor.EventKind.delta)] > 0);
    try testing.expect(k[@intFromEnum(cursor.EventKind.step)] > 0);
    try testing.expectEqual(@as(usize, 1), k[@intFromEnum(cursor.EventKind.result)]);
    try testing.expectEqual(@as(usize, 0), k[@intFromEnum(cursor.EventKind.invalid)]);
    for ([_][]const u8{ "system", "status", "thinking", "assistant", "tool_call", "usage", "text-delta", "result" }) |t|
        if (!d.hasType(t)) std.debug.panic("no '{s}' event", .{t});
    try testing.expectEqualStrings("result", d.types.items[d.types.items.len - 1]);
}

test "double: event accessors (json, offset, parse)" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("Say hello", .{});
    defer run.deinit();
    const first = (try run.next(5000)).?;
    defer first.deinit();
    try testing.expectEqual(cursor.EventKind.message, first.kind());
    try testing.expectEqualStrings("system", first.typeName());
    try testing.expect(first.offset() != null);
    try testing.expect(first.text() == null);
    const System = struct { subtype: []const u8 };
    const p = try first.parse(System, testing.allocator);
    defer p.deinit();
    try testing.expectEqualStrings("init", p.value.subtype);
    _ = try run.wait(null);
}

fn pollCost(run: *cursor.Run, worst_us: *i64) !cursor.Poll {
    const t = env.now();
    const p = try run.poll();
    worst_us.* = @max(worst_us.*, t.untilNow(testing.io, .awake).toMicroseconds());
    return p;
}

test "double: a 60 Hz frame loop on run.fd() and run.poll() never blocks, and cancel ends the run" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:slow:40", .{});
    defer run.deinit();
    const fd = run.fd() orelse return error.NoWakeFd;
    var chunks: usize = 0;
    var frames: usize = 0;
    var worst_poll_us: i64 = 0;
    var ended = false;
    var cancelled_at: ?std.Io.Timestamp = null;
    while (!ended and frames < 600) : (frames += 1) {
        var fds = [_]std.posix.pollfd{.{ .fd = fd, .events = std.posix.POLL.IN, .revents = 0 }};
        _ = try std.posix.poll(&fds, 16); // the rest of a 60 Hz frame
        drain: while (true) switch (try pollCost(&run, &worst_poll_us)) {
            .event => |ev| {
                defer ev.deinit();
                if (ev.text() != null) chunks += 1;
            },
            .pending => break :drain,
            .end => {
                ended = true;
                break :drain;
            },
        };
        if (chunks >= 3 and cancelled_at == null) {
            cancelled_at = env.now();
            try run.cancel(); // never blocks
        }
    }
    try testing.expect(ended);
    try testing.expect(chunks >= 3);
    const cancel_ms = cancelled_at.?.untilNow(testing.io, .awake).toMilliseconds();
    std.debug.print("  frame loop: {d} frames, {d} chunks, worst poll {d} us, cancel ended the run in {d} ms\n", .{ frames, chunks, worst_poll_us, cancel_ms });
    try testing.expect(worst_poll_us < 50_000);
    try testing.expect(cancel_ms < 2000);
    try testing.expectEqual(cursor.RunStatus.cancelled, run.status());
    try testing.expectEqual(cursor.Poll.end, try run.poll());
}

test "double: next with a timeout gives error.Timeout; cancel from another thread wakes a blocked reader" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:slow:5000", .{});
    defer run.deinit();
    // system and status come at once; the first chunk only after 5 s
    while (true) {
        const ev = run.next(300) catch |err| {
            try testing.expectEqual(error.Timeout, err);
            break;
        } orelse return error.EndedEarly;
        ev.deinit();
    }
    const Canceller = struct {
        fn go(r: *cursor.Run) void {
            env.sleepMs(100);
            r.cancel() catch unreachable;
        }
    };
    const t0 = env.now();
    const th = try std.Thread.spawn(.{}, Canceller.go, .{&run});
    var d = try env.drain(&run);
    defer d.deinit();
    th.join();
    const ms = env.since(t0);
    try testing.expect(ms < 3000);
    try testing.expectEqual(cursor.RunStatus.cancelled, run.status());
    const res = try run.result(testing.allocator, 1000);
    defer res.deinit();
    try testing.expectEqualStrings("cancelled", res.value.status);
}

test "double: errors by kind, with diagnostics" {
    var e = try env.Env.init();
    defer e.deinit();
    var diag: cursor.Diagnostics = .{};
    defer diag.deinit();

    // a bad option: InvalidArgument naming the key
    try testing.expectError(error.InvalidArgument, cursor.Client.init(.{ .json = "{\"nope\":1}", .diag = &diag }));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "nope") != null);
    try testing.expectEqual(@as(?cursor.Error, error.InvalidArgument), diag.err());

    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();

    // unknown agent: NotFound with the bridge's codes
    try testing.expectError(error.NotFound, client.resumeAgent("agent-00000000-0000-0000-0000-000000000000", .{ .model = "composer-2", .diag = &diag }));
    try testing.expectEqualStrings("not_found", diag.connectCode().?);
    try testing.expect(diag.httpStatus() == 404);
    try testing.expect(!diag.retryable());

    // a success clears the diagnostics
    try client.ping(.{ .diag = &diag });
    try testing.expectEqual(@as(?cursor.Error, null), diag.err());
    try testing.expectEqualStrings("", diag.message());

    // a busy agent
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("scenario:slow:50", .{});
    defer run.deinit();
    try testing.expectError(error.Busy, agent.send("again", .{ .diag = &diag }));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "busy") != null or std.mem.indexOf(u8, diag.message(), "active run") != null);
    try run.cancel();
    _ = try run.wait(5000);

    // a model the catalog lacks
    try testing.expectError(error.InvalidArgument, client.createAgent(.{ .model = "no-such-model", .diag = &diag }));

    // an invalid tool name
    var n: usize = 0;
    try testing.expectError(error.InvalidArgument, client.addTool("bad name!", .{ .diag = &diag }, &n, countCalls));

    // a bridge that dies mid-run: the stream's error is BridgeExited, kept in run.diagnostics
    var dying = try agent.send("scenario:die:4", .{});
    defer dying.deinit();
    var d = try env.drain(&dying);
    defer d.deinit();
    try testing.expectEqual(@as(?cursor.Error, error.BridgeExited), d.failure);
    try testing.expectEqual(@as(?cursor.Error, error.BridgeExited), dying.diagnostics.err());
    try testing.expect(dying.diagnostics.message().len > 0);

    // a handle used after its client was stopped
    client.shutdown();
    try testing.expectError(error.Usage, client.ping(.{}));
}

fn countCalls(n: *usize, call: *cursor.ToolCall) !void {
    n.* += 1;
    try call.complete("{}");
}

test "double: prompt (one call) returns the text; a failed run is error.RunFailed" {
    const text = try cursor.prompt("Say hello", .{ .model = "composer-2" });
    defer text.deinit();
    try testing.expectEqualStrings("Hello from the bridge double.", text.slice());
    var diag: cursor.Diagnostics = .{};
    defer diag.deinit();
    try testing.expectError(error.RunFailed, cursor.prompt("scenario:fail", .{ .model = "composer-2", .diag = &diag }));
    try testing.expect(std.mem.indexOf(u8, diag.message(), "scripted failure") != null);
}

test "double: management (agents, runs, messages, artifacts, usage, catalog)" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.double()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2", .name = "zig-mgmt" });
    defer agent.deinit();
    const id = agent.id();
    var run = try agent.send("Say hello", .{});
    defer run.deinit();
    _ = try run.wait(null);
    const gpa = testing.allocator;
    const contains = struct {
        fn f(s: cursor.String, needle: []const u8) !void {
            defer s.deinit();
            if (std.mem.indexOf(u8, s.slice(), needle) == null) std.debug.panic("'{s}' not in {s}", .{ needle, s.slice() });
        }
    }.f;
    try contains(try client.listAgents(.{ .limit = 10 }), id);
    try contains(try client.getAgent(id, .{}), "zig-mgmt");
    try contains(try agent.info(.{}), id);
    try contains(try client.listRuns(id, .{}), run.id());
    try contains(try client.getRun(run.id(), .{ .agent_id = id }), run.id());
    _ = try contains(try agent.messages(.{ .limit = 5 }), "");
    try contains(try agent.artifacts(.{}), "artifacts/report.txt");
    const art = try agent.downloadArtifact("artifacts/report.txt", .{});
    defer art.deinit();
    try testing.expectEqual(@as(usize, 100_000), art.slice().len);
    try contains(try agent.usage(.{}), "");
    try contains(try client.runConversation(run.id(), .{}), "");
    try contains(try client.models(.{}), "");
    const Page = struct { items: []const struct { agentId: []const u8 }, nextCursor: ?[]const u8 = null };
    const page_text = try client.listAgents(.{ .limit = 1 });
    defer page_text.deinit();
    const page = try page_text.parse(Page, gpa);
    defer page.deinit();
    try testing.expectEqual(@as(usize, 1), page.value.items.len);
    try agent.archive(.{});
    try agent.unarchive(.{});
    try client.archiveAgent(id, .{});
    try client.unarchiveAgent(id, .{});
    try agent.reload(.{});
    try agent.close(.{});
    try client.deleteAgent(id, .{});
    try testing.expectError(error.NotFound, client.getAgent(id, .{}));
}
