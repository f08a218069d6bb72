//! Results the library allocated: owned by the caller, released with `deinit`.
const std = @import("std");
const c = @import("c");

/// Text the library returned (JSON or plain text). Owned: call `deinit` (it is freed inside
/// the C library). `slice` borrows it until then; `dupe` and `parse` copy it into an allocator
/// of yours.
pub const String = struct {
    ptr: [*:0]u8,

    pub fn fromC(p: [*c]u8) String {
        // The library writes a string on success; an empty static stands in should it not.
        return .{ .ptr = if (p == null) @constCast(empty) else @ptrCast(p) };
    }

    const empty: [*:0]const u8 = "";

    pub fn deinit(self: String) void {
        if (self.ptr != empty) c.cursor_string_free(self.ptr);
    }

    /// Borrowed until `deinit`.
    pub fn slice(self: String) [:0]const u8 {
        return std.mem.span(self.ptr);
    }

    /// A copy in `gpa` (yours to free).
    pub fn dupe(self: String, gpa: std.mem.Allocator) error{OutOfMemory}![]u8 {
        return gpa.dupe(u8, self.slice());
    }

    /// Parses the JSON into `T`, copying every string into `gpa` (unknown fields are
    /// ignored); free with the result's `deinit`. The `String` may be freed right after.
    pub fn parse(self: String, comptime T: type, gpa: std.mem.Allocator) !std.json.Parsed(T) {
        return std.json.parseFromSlice(T, gpa, self.slice(), .{ .ignore_unknown_fields = true, .allocate = .alloc_always });
    }
};

/// Bytes the library returned (an artifact). Owned: call `deinit`.
pub const Bytes = struct {
    ptr: ?[*]u8,
    len: usize,

    pub fn deinit(self: Bytes) void {
        c.cursor_bytes_free(self.ptr, self.len);
    }

    /// Borrowed until `deinit`.
    pub fn slice(self: Bytes) []const u8 {
        return if (self.ptr) |p| p[0..self.len] else &.{};
    }
};
