//! Streams one answer: `quickstart ["prompt"]`. The key comes from CURSOR_API_KEY and the
//! bridge is found automatically (CURSOR_SDK_BRIDGE_BIN, the fetched cache, then PATH).
const std = @import("std");
const cursor = @import("cursor_sdk");

pub fn main(init: std.process.Init) !void {
    var args = init.minimal.args.iterate();
    _ = args.next();
    const message = args.next() orelse "Summarise README.md";

    var out_buf: [4096]u8 = undefined;
    var out = std.Io.File.stdout().writer(init.io, &out_buf);
    const w = &out.interface;

    var diag: cursor.Diagnostics = .{};
    defer diag.deinit();
    var client = try cursor.Client.init(.{});
    defer client.deinit();
    var agent = client.createAgent(.{ .model = "composer-2", .cwd = ".", .diag = &diag }) catch |e| {
        std.debug.print("create failed: {t}: {f}\n", .{ e, diag });
        return e;
    };
    defer agent.deinit();
    var run = try agent.send(message, .{});
    defer run.deinit();
    while (run.next(null) catch |e| {
        std.debug.print("\nrun failed: {t}: {f}\n", .{ e, run.diagnostics });
        return e;
    }) |ev| {
        defer ev.deinit();
        if (ev.kind() == .message) if (ev.text()) |t| try w.writeAll(t);
        try w.flush();
    }
    const result = try run.result(init.gpa, null);
    defer result.deinit();
    try w.print("\n[{s}]\n", .{result.value.status});
    try w.flush();
}
