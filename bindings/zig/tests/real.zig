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
