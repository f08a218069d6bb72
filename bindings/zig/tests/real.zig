const std = @import("std");
const cursor = @import("cursor_sdk");
const env = @import("env.zig");
const testing = std.testing;

test "real: start, ping and version" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.realBridge()));
    defer client.deinit();
    try client.start(.{});
    try client.ping(.{});
    const v = try client.version(testing.allocator, .{});
    defer v.deinit();
    try testing.expect(v.value.bridgeVersion.len > 0);
    try testing.expect(v.value.sdkVersion != null);
}

test "real: management and the typed not-found error" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.realBridge()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2", .name = "zig-real" });
    defer agent.deinit();
    const info = try agent.info(.{});
    defer info.deinit();
    try testing.expect(std.mem.indexOf(u8, info.slice(), agent.id()) != null);
    const page = try client.listAgents(.{ .limit = 5 });
    defer page.deinit();
    try testing.expect(std.mem.indexOf(u8, page.slice(), agent.id()) != null);
    const runs = try client.listRuns(agent.id(), .{});
    runs.deinit();
    try agent.archive(.{});
    try agent.unarchive(.{});
    var other = try client.createAgent(.{ .model = "composer-2" });
    const other_id = try testing.allocator.dupeSentinel(u8, other.id(), 0);
    defer testing.allocator.free(other_id);
    other.deinit();
    try client.deleteAgent(other_id, .{});
    var diag: cursor.Diagnostics = .{};
    defer diag.deinit();
    try testing.expectError(error.NotFound, client.getAgent(other_id, .{ .diag = &diag }));
    try testing.expectEqualStrings("not_found", diag.connectCode().?);
    try testing.expect(diag.sdkCode() != 0);
    // catalog calls need the Cursor backend: offline they fail with a typed error
    if (client.me(.{ .diag = &diag })) |s| {
        s.deinit();
        return error.MeSucceededOffline;
    } else |_| try testing.expect(diag.message().len > 0);
}

test "real: busy, then cancel ends the run (fd readable at the end)" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.realBridge()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("Say hello", .{});
    defer run.deinit();
    try testing.expect(run.id().len > 0);
    try testing.expectEqual(cursor.RunStatus.running, run.status());
    try testing.expectError(error.Busy, agent.send("Again", .{}));
    const fd = run.fd().?;
    const t0 = env.now();
    try run.cancel();
    var d = try env.drain(&run);
    defer d.deinit();
    const ms = env.since(t0);
    std.debug.print("  real: cancel ended the run in {d} ms\n", .{ms});
    try testing.expect(ms < 10_000);
    var fds = [_]std.posix.pollfd{.{ .fd = fd, .events = std.posix.POLL.IN, .revents = 0 }};
    try testing.expectEqual(@as(usize, 1), try std.posix.poll(&fds, 0));
    try testing.expectEqual(cursor.RunStatus.cancelled, run.status());
    const res = try run.result(testing.allocator, null);
    defer res.deinit();
    try testing.expectEqualStrings("cancelled", res.value.status);
}

test "real: the offline turn fails with status error (about 16 s)" {
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.realBridge()));
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    var run = try agent.send("Say hello", .{});
    defer run.deinit();
    const t0 = env.now();
    var d = try env.drain(&run);
    defer d.deinit();
    std.debug.print("  real: offline turn ended after {d} ms with {d} events\n", .{ env.since(t0), d.types.items.len });
    try testing.expectEqualStrings("result", d.types.items[d.types.items.len - 1]);
    try testing.expectEqual(cursor.RunStatus.err, run.status());
    const res = try run.result(testing.allocator, null);
    defer res.deinit();
    try testing.expectEqualStrings("error", res.value.status);
    try testing.expect(std.mem.indexOf(u8, res.value.errorMessage orelse "", "API key exchange") != null);
}

test "real: interop with an agent created through the raw C API" {
    const c = cursor.c;
    var e = try env.Env.init();
    defer e.deinit();
    var client = try cursor.Client.init(e.options(env.realBridge()));
    defer client.deinit();
    // C side: create through cursor_sdk.c on the Zig client's handle
    var raw: ?*c.cursor_agent = null;
    var err: ?*c.cursor_error = null;
    try testing.expectEqual(@as(c_int, c.CURSOR_OK), c.cursor_agent_create(client.raw, "{\"model\":\"composer-2\",\"name\":\"made-in-c\"}", &raw, &err));
    // Zig side: adopt the C handle, and resume the same agent by id
    var adopted: cursor.Agent = .{ .raw = raw.? };
    defer adopted.deinit();
    var resumed = try client.resumeAgent(adopted.id(), .{ .model = "composer-2" });
    defer resumed.deinit();
    try testing.expectEqualStrings(adopted.id(), resumed.id());
    const info = try resumed.info(.{});
    defer info.deinit();
    try testing.expect(std.mem.indexOf(u8, info.slice(), "made-in-c") != null);
    // and the other way: a Zig-made agent read through C
    var out: [*c]u8 = null;
    try testing.expectEqual(@as(c_int, c.CURSOR_OK), c.cursor_client_get_agent(client.raw, resumed.id().ptr, null, &out, &err));
    defer c.cursor_string_free(out);
    try testing.expect(std.mem.indexOf(u8, std.mem.span(out), "made-in-c") != null);
    try testing.expectEqualStrings("0.1.0", cursor.version());
    try testing.expect(cursor.versionMatches());
}
