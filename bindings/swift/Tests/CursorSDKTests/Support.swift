import CursorSDK
import Foundation
import Testing

/// Where the suite's bridges are (set by scripts/swift-test.sh). A missing one fails the test
/// that needs it, saying why: nothing is skipped.
enum Env {
    static func path(_ name: String) throws -> String {
        guard let v = ProcessInfo.processInfo.environment[name], !v.isEmpty else {
            throw SetupError("\(name) is not set: run the suite through scripts/swift-test.sh (make swift-test)")
        }
        guard FileManager.default.isExecutableFile(atPath: v) else { throw SetupError("\(name)=\(v) is not executable") }
        return v
    }

    static var double: String { get throws { try path("CURSOR_SDK_TEST_DOUBLE") } }
    static var realBridge: String { get throws { try path("CURSOR_SDK_TEST_REAL_BRIDGE") } }
}

struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A temp directory (workspace and HOME of one test's bridge), removed at deinit.
final class TempDir: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cursor-swift-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base.appendingPathComponent("home"), withIntermediateDirectories: true)
        path = base.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Client options for `bridge` in `dir`: what tests/c/harness.h uses.
func testOptions(bridge: String, dir: TempDir, extra: (inout ClientOptions) -> Void = { _ in }) -> ClientOptions {
    var o = ClientOptions(
        apiKey: "test-dummy-key", bridgePath: bridge, workspace: dir.path,
        bridgeEnv: [
            "HOME": dir.path + "/home", "TMPDIR": dir.path,
            "CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON": #"[{"id":"composer-2"}]"#,
            "CURSOR_SDK_DOUBLE_KEEPALIVE_MS": "100",
        ])
    extra(&o)
    return o
}

/// Monotonic seconds since `start`.
func elapsed(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// Every event of a run, in order.
func collect(_ run: Run) async throws -> [RunEvent] {
    var all: [RunEvent] = []
    for try await e in run.events { all.append(e) }
    return all
}
