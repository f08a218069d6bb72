//! Streams a run inside a 60 Hz frame loop without ever blocking a frame: each frame waits on
//! the run's descriptor for at most the rest of the frame, then drains `run.poll()` (which
//! never blocks). After `--cancel-after-ms` (default 2000) it cancels the run (which never
//! blocks either) and keeps rendering until the stream ends.
//!     frame-loop ["prompt"] [cancel-after-ms]
const std = @import("std");
const cursor = @import("cursor_sdk");

const frame_ns = std.time.ns_per_s / 60;

pub fn main(init: std.process.Init) !void {
    const io = init.io;
    var args = init.minimal.args.iterate();
    _ = args.next();
    const message = args.next() orelse "Summarise README.md";
    const cancel_after_ms = if (args.next()) |a| try std.fmt.parseInt(i64, a, 10) else 2000;

    var client = try cursor.Client.init(.{});
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2", .cwd = "." });
    defer agent.deinit();
    var run = try agent.send(message, .{});
    defer run.deinit();
    const fd = run.fd() orelse return error.NoWakeDescriptor;

    const start = std.Io.Timestamp.now(io, .awake);
    var frames: u64 = 0;
    var events: u64 = 0;
    var chars: u64 = 0;
    var worst_work_us: i64 = 0; // time a frame spent outside its wait
    var cancelled = false;
    var ended = false;
    while (!ended) : (frames += 1) {
        const frame_start = std.Io.Timestamp.now(io, .awake);
        // "render": here a spinner and the text received so far
        if (frames % 30 == 0) std.debug.print("\rframe {d}: {d} events, {d} chars ", .{ frames, events, chars });
        while (true) switch (try run.poll()) {
            .event => |ev| {
                defer ev.deinit();
                events += 1;
                if (ev.kind() == .message) if (ev.text()) |t| {
                    chars += t.len;
                };
            },
            .pending => break,
            .end => {
                ended = true;
                break;
            },
        };
        if (!cancelled and start.untilNow(io, .awake).toMilliseconds() >= cancel_after_ms) {
            try run.cancel();
            cancelled = true;
        }
        const work = frame_start.untilNow(io, .awake);
        worst_work_us = @max(worst_work_us, work.toMicroseconds());
        // sleep until the frame's end, waking early when the run has something
        const left_ms: i32 = @intCast(@max(0, @divTrunc(frame_ns - @as(i64, @intCast(work.nanoseconds)), std.time.ns_per_ms)));
        var fds = [_]std.posix.pollfd{.{ .fd = fd, .events = std.posix.POLL.IN, .revents = 0 }};
        if (!ended) _ = try std.posix.poll(&fds, left_ms);
    }
    std.debug.print("\n", .{});
    var buf: [256]u8 = undefined;
    var out = std.Io.File.stdout().writer(io, &buf);
    try out.interface.print("frames={d} events={d} chars={d} worst_frame_work_ms={d:.3} status={t}\n", .{
        frames, events, chars, @as(f64, @floatFromInt(worst_work_us)) / 1000.0, run.status(),
    });
    try out.interface.flush();
}
