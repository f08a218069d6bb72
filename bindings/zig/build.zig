//! The `cursor_sdk` Zig package: the module `cursor_sdk` (with the raw C API as
//! `cursor_sdk.c`, translated from the library's header), its tests and examples.
//!
//! Finding libcursor_sdk: `-Dcursor-sdk-prefix=/abs/prefix` (a `make install` layout:
//! `include/cursor_sdk.h`, `lib/libcursor_sdk.so`), otherwise pkg-config's `cursor_sdk`.
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const sdk = locate(b);

    const translate = b.addTranslateC(.{
        .root_source_file = b.path("src/c.h"),
        .target = target,
        .optimize = optimize,
    });
    translate.addIncludePath(.{ .cwd_relative = sdk.include });
    const c_mod = translate.createModule();

    const mod = b.addModule("cursor_sdk", .{
        .root_source_file = b.path("src/root.zig"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
        .imports = &.{.{ .name = "c", .module = c_mod }},
    });
    mod.addLibraryPath(.{ .cwd_relative = sdk.lib });
    mod.addRPath(.{ .cwd_relative = sdk.lib });
    mod.linkSystemLibrary("cursor_sdk", .{ .use_pkg_config = .no });

    const filters = b.option([]const []const u8, "test-filter", "run only the tests whose name contains this") orelse &.{};
    const test_step = b.step("test", "Unit tests, then the integration tests (bridge double and real bridge)");

    const unit = b.addTest(.{ .root_module = mod, .filters = filters });
    const run_unit = b.addRunArtifact(unit);
    run_unit.has_side_effects = true;
    test_step.dependOn(&run_unit.step);

    const integration = b.addTest(.{
        .root_module = b.createModule(.{
            .root_source_file = b.path("tests/all.zig"),
            .target = target,
            .optimize = optimize,
            .link_libc = true,
            .imports = &.{
                .{ .name = "cursor_sdk", .module = mod },
                .{ .name = "c", .module = c_mod },
            },
        }),
        .filters = filters,
    });
    const run_integration = b.addRunArtifact(integration);
    run_integration.has_side_effects = true;
    run_integration.step.dependOn(&run_unit.step);
    test_step.dependOn(&run_integration.step);
}

const Sdk = struct { include: []const u8, lib: []const u8 };

fn locate(b: *std.Build) Sdk {
    if (b.option([]const u8, "cursor-sdk-prefix", "absolute prefix holding include/cursor_sdk.h and lib/libcursor_sdk.so (default: pkg-config)")) |prefix| {
        if (!std.fs.path.isAbsolute(prefix)) std.debug.panic("-Dcursor-sdk-prefix must be an absolute path, got '{s}'", .{prefix});
        return .{ .include = b.pathJoin(&.{ prefix, "include" }), .lib = b.pathJoin(&.{ prefix, "lib" }) };
    }
    return .{ .include = pkgConfig(b, "includedir"), .lib = pkgConfig(b, "libdir") };
}

fn pkgConfig(b: *std.Build, variable: []const u8) []const u8 {
    var code: u8 = 0;
    const out = b.runAllowFail(&.{ "pkg-config", b.fmt("--variable={s}", .{variable}), "cursor_sdk" }, &code, .ignore) catch |e|
        std.debug.panic("cursor_sdk not found: pass -Dcursor-sdk-prefix=/abs/prefix, or install it (make install) so that `pkg-config cursor_sdk` finds it ({t})", .{e});
    return std.mem.trim(u8, out, " \r\n");
}
