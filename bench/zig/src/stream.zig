//! Stream throughput through the Zig layer against the C ABI, in the same process and run:
//!     zig-bench <client options JSON> <events> <rounds>
//! Each round streams `scenario:long:<events>` twice on one agent, once read through
//! `cursor_sdk.c` (cursor_run_next_event + cursor_event_text + cursor_event_free) and once
//! through `Run.next` + `Event.text` + `Event.deinit`, alternating which goes first. Prints JSON:
//! per-round nanoseconds per event for both, and their median ratio.
const std = @import("std");
const cursor = @import("cursor_sdk");
const c = cursor.c;

fn viaC(agent: *cursor.Agent, msg: [:0]const u8) !u64 {
    var run = try agent.send(msg, .{});
    defer run.deinit();
    var n: u64 = 0;
    var bytes: usize = 0;
    while (true) {
        var ev: ?*c.cursor_event = null;
        const st = c.cursor_run_next_event(run.raw, -1, &ev, null);
        if (st == c.CURSOR_END) break;
        if (st != c.CURSOR_OK) return error.StreamFailed;
        if (c.cursor_event_text(ev)) |t| bytes += std.mem.len(t);
        c.cursor_event_free(ev);
        n += 1;
    }
    std.mem.doNotOptimizeAway(bytes);
    return n;
}

fn viaZig(agent: *cursor.Agent, msg: [:0]const u8) !u64 {
    var run = try agent.send(msg, .{});
    defer run.deinit();
    var n: u64 = 0;
    var bytes: usize = 0;
    while (try run.next(null)) |ev| {
        defer ev.deinit();
        if (ev.text()) |t| bytes += t.len;
        n += 1;
    }
    std.mem.doNotOptimizeAway(bytes);
    return n;
}

fn lessThan(_: void, a: f64, b: f64) bool {
    return a < b;
}

fn median(v: []f64) f64 {
    std.mem.sort(f64, v, {}, lessThan);
    return v[v.len / 2];
}

pub fn main(init: std.process.Init) !void {
    const io = init.io;
    var args = init.minimal.args.iterate();
    _ = args.next();
    const options = args.next() orelse return error.Usage;
    const events = try std.fmt.parseInt(u32, args.next() orelse return error.Usage, 10);
    const rounds = try std.fmt.parseInt(u32, args.next() orelse "3", 10);
    const msg = try std.fmt.allocPrintSentinel(init.gpa, "scenario:long:{d}", .{events}, 0);
    defer init.gpa.free(msg);

    var client = try cursor.Client.init(.{ .json = options });
    defer client.deinit();
    var agent = try client.createAgent(.{ .model = "composer-2" });
    defer agent.deinit();
    _ = try viaC(&agent, "scenario:long:10"); // warm-up

    const c_ns = try init.gpa.alloc(f64, rounds);
    defer init.gpa.free(c_ns);
    const z_ns = try init.gpa.alloc(f64, rounds);
    defer init.gpa.free(z_ns);
    const ratios = try init.gpa.alloc(f64, rounds);
    defer init.gpa.free(ratios);
    var n_events: u64 = 0;
    for (0..rounds) |i| {
        inline for (.{ 0, 1 }) |k| {
            const zig_turn = (i + k) % 2 == 1;
            const t = std.Io.Timestamp.now(io, .awake);
            const n = if (zig_turn) try viaZig(&agent, msg) else try viaC(&agent, msg);
            const per: f64 = @as(f64, @floatFromInt(t.untilNow(io, .awake).nanoseconds)) / @as(f64, @floatFromInt(n));
            if (zig_turn) z_ns[i] = per else c_ns[i] = per;
            n_events = n;
        }
        ratios[i] = z_ns[i] / c_ns[i];
    }
    var buf: [1024]u8 = undefined;
    var out = std.Io.File.stdout().writer(io, &buf);
    try out.interface.print("{{\"events\":{d},\"rounds\":{d},\"c_ns_per_event\":{d:.1},\"zig_ns_per_event\":{d:.1},\"ratio_zig_vs_c\":{d:.3}}}\n", .{
        n_events, rounds, median(c_ns), median(z_ns), median(ratios),
    });
    try out.interface.flush();
}
