//! `zig build -Dcursor-sdk-prefix=/abs/prefix` → zig-out/bin/zig-bench (ReleaseFast).
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const prefix = b.option([]const u8, "cursor-sdk-prefix", "absolute prefix of libcursor_sdk") orelse
        @panic("-Dcursor-sdk-prefix is required");
    const dep = b.dependency("cursor_sdk", .{ .target = target, .optimize = .ReleaseFast, .@"cursor-sdk-prefix" = prefix });
    const exe = b.addExecutable(.{
        .name = "zig-bench",
        .root_module = b.createModule(.{
            .root_source_file = b.path("src/stream.zig"),
            .target = target,
            .optimize = .ReleaseFast,
            .imports = &.{.{ .name = "cursor_sdk", .module = dep.module("cursor_sdk") }},
        }),
    });
    b.installArtifact(exe);
}
