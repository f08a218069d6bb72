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
