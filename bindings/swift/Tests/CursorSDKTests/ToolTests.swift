import CursorSDK
import Foundation
import Synchronization
import Testing

/// A value whose release the tests watch (through a weak reference).
final class Sentinel: Sendable {}

/// Custom tools and stores on the bridge double, and the release of every closure given to C.
@Suite(.timeLimit(.minutes(1))) struct ToolTests {
    @Test func toolsAnsweredLateAndFailed() async throws {
        let dir = try TempDir()
        weak var watched: Sentinel?
        let calls = Atomic<Int>(0)
        do {
            let sentinel = Sentinel()
            watched = sentinel
            let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
            try client.addTool(
                name: "echo", description: "Echoes its input",
                schema: ["type": "object", "properties": ["input": ["type": "string"]]]
            ) { call in
                _ = sentinel
                calls.add(1, ordering: .relaxed)
                // Answered late, from a task, after the library's thread has returned.
                try await Task.sleep(for: .milliseconds(100))
                let i = call.arguments["i"]?.intValue ?? -1
                if i == 1 { throw CursorError(kind: .internalError, message: "tool refused input \(i)") }
                return ["echoed": call.arguments["input"] ?? .null, "agent": .string(call.agentId)]
            }
            let agent = try client.createAgent(.init(model: "composer-2"))
            let run = try agent.send("scenario:tools:3")
            let events = try await collect(run)
            let finished = events.compactMap { e -> ToolCallEvent? in
                if case .toolCall(let c) = e, c.status != "running" { c } else { nil }
            }
            #expect(finished.count == 3)
            // A thrown error is an error result the model sees (MCP's isError), and the run goes on.
            let failed = finished.filter { $0.result?["value"]?["isError"] == true }
            #expect(failed.map(\.args["i"]) == [1])
            #expect(failed.first?.result?.jsonText.contains("tool refused input 1") == true)
            let ok = finished.filter { $0.result?["value"]?["agent"]?.stringValue == agent.id }
            #expect(ok.map(\.args["i"]) == [2, 3])
            #expect(ok.first?.result?["value"]?["echoed"] == "hello from the double #2")
            #expect(try await run.result.status == .finished)
            #expect(calls.load(ordering: .relaxed) == 3)
            #expect(watched != nil)  // registered: the library holds the closure
        }
        // The client (last reference dropped above) released the closure exactly once.
        #expect(watched == nil)
    }

    @Test func replacingAToolReleasesTheOldClosure() throws {
        let dir = try TempDir()
        weak var first: Sentinel?
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        do {
            let s = Sentinel()
            first = s
            try client.addTool(name: "t") { _ in _ = s; return "one" }
        }
        #expect(first != nil)
        try client.addTool(name: "t") { _ in "two" }
        #expect(first == nil)
        // A refused registration releases its closure at once.
        weak var refused: Sentinel?
        do {
            let s = Sentinel()
            refused = s
            #expect { try client.addTool(name: "bad name!") { _ in _ = s; return "x" } } throws: {
                ($0 as? CursorError)?.kind == .invalidArgument
            }
        }
        #expect(refused == nil)
    }

    @Test func logHandlerGetsLinesAndIsReleased() async throws {
        let dir = try TempDir()
        let lines = Mutex<[String]>([])
        weak var watched: Sentinel?
        do {
            let s = Sentinel()
            watched = s
            Cursor.setLogHandler(level: .debug) { _, line in
                _ = s
                lines.withLock { $0.append(line) }
            }
        }
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir) { $0.verbose = true })
        try client.ping()
        // The bridge's trace lines reach the handler from the library's stderr thread, after
        // the call they trace returned: wait for them (bounded) rather than race them.
        let deadline = ContinuousClock.now + .seconds(10)
        while lines.withLock({ $0 }).isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!lines.withLock { $0 }.isEmpty)
        #expect(watched != nil)
        // Removing the handler waits for its calls in progress, then releases it once.
        Cursor.setLogHandler(nil)
        #expect(watched == nil)
    }

    /// A store keeping records in memory, counting its calls.
    final class MemoryStore: AgentStore {
        let records = Mutex<[String: JSONValue]>([:])
        let ops = Mutex<[String]>([])

        func handle(substore: String, method: String, input: JSONValue) throws -> JSONValue? {
            ops.withLock { $0.append("\(substore).\(method)") }
            guard substore == "agents" else { return nil }
            switch method {
            case "get":
                let id = input["agentId"]?.stringValue ?? input["id"]?.stringValue ?? ""
                return records.withLock { $0[id] }
            case "create", "update":
                let record = input["agent"] ?? input["record"] ?? input
                let id = record["agentId"]?.stringValue ?? record["id"]?.stringValue ?? ""
                records.withLock { $0[id] = record }
                return record
            case "list": return .array(records.withLock { Array($0.values) })
            case "delete": records.withLock { $0.removeAll() }; return nil
            default: throw CursorError(kind: .unsupported, message: "unsupported store op \(method)")
            }
        }
    }

    @Test func customStore() throws {
        let dir = try TempDir()
        weak var watched: MemoryStore?
        let ops: [String]
        do {
            let store = MemoryStore()
            watched = store
            let client = try CursorClient(testOptions(bridge: Env.double, dir: dir), store: store)
            let agent = try client.createAgent(.init(model: "composer-2"))
            #expect(try agent.info().id == agent.id)
            ops = store.ops.withLock { $0 }
        }
        #expect(ops.starts(with: ["agents.get", "agents.create"]))
        #expect(ops.contains("agents.update"))
        #expect(watched == nil)  // released once, when the client was freed
    }
}
