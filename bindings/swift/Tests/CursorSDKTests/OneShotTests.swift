import CursorSDK
import Foundation
import Testing

/// `Cursor.prompt` and the streaming example, on the double (scripts/swift-test.sh sets
/// CURSOR_SDK_BRIDGE_BIN to it and CURSOR_API_KEY, as a user's environment would).
@Suite(.timeLimit(.minutes(1))) struct OneShotTests {
    @Test func promptInOneCall() async throws {
        _ = try Env.path("CURSOR_SDK_BRIDGE_BIN")
        let text = try await Cursor.prompt("Say hi", model: "composer-2")
        #expect(text == "Hello from the bridge double.")
        await #expect { try await Cursor.prompt("scenario:fail", model: "composer-2") } throws: { e in
            guard let e = e as? CursorError else { return false }
            return e.kind == .runFailed && e.message.contains("scripted failure")
        }
    }

    @Test func streamingExampleRuns() throws {
        guard let examples = ProcessInfo.processInfo.environment["CURSOR_SDK_SWIFT_EXAMPLES"] else {
            throw SetupError("CURSOR_SDK_SWIFT_EXAMPLES is not set: run through scripts/swift-test.sh")
        }
        let binary = examples + "/stream/.build/debug/stream"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw SetupError("\(binary) is missing: scripts/swift-test.sh builds it first")
        }
        let dir = try TempDir()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["Summarise README.md"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir.path)
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = dir.path + "/home"
        p.environment = env
        // Output to a file, not a pipe: a bridge another test spawns meanwhile may inherit a
        // pipe's write end and keep it open.
        let outPath = dir.path + "/stdout"
        #expect(FileManager.default.createFile(atPath: outPath, contents: nil))
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        try out.close()
        let text = try String(contentsOfFile: outPath, encoding: .utf8)
        #expect(p.terminationStatus == 0)
        #expect(text.hasPrefix("Hello from the bridge double.\n[finished] run run-"), "output: \(text)")
    }
}
