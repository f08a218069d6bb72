//! The integration suites: the bridge double, then the real bridge.
test {
    _ = @import("double.zig");
    _ = @import("tools.zig");
    _ = @import("real.zig");
}
