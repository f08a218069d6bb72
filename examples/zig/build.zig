//! The examples, built against the `cursor_sdk` package as a dependency (as your project would).
//! `zig build -Dcursor-sdk-prefix=/abs/prefix` (or pkg-config after `make install`), then
//! `zig build quickstart -- "prompt"` or `zig build frame-loop -- "prompt"`.
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const prefix = b.option([]const u8, "cursor-sdk-prefix", "absolute prefix of libcursor_sdk (default: pkg-config)");
    const dep = if (prefix) |p|
        b.dependency("cursor_sdk", .{ .target = target, .optimize = optimize, .@"cursor-sdk-prefix" = p })
    else
        b.dependency("cursor_sdk", .{ .target = target, .optimize = optimize });

    for ([_][]const u8{ "quickstart", "frame-loop" }) |name| {
        const exe = b.addExecutable(.{
            .name = name,
            .root_module = b.createModule(.{
                .root_source_file = b.path(b.fmt("src/{s}.zig", .{name})),
                .target = target,
                .optimize = optimize,
                .imports = &.{.{ .name = "cursor_sdk", .module = dep.module("cursor_sdk") }},
            }),
        });
        b.installArtifact(exe);
        const run = b.addRunArtifact(exe);
        run.addPassthruArgs();
        b.step(name, b.fmt("Run the {s} example", .{name})).dependOn(&run.step);
    }
}
