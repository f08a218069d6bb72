import CCursorSDK
import CursorSDK
import Foundation
import Testing

/// Against the real cursor-sdk-bridge (cursor-sdk 1.1.0), offline: no Cursor backend is
/// reachable, so turns fail the way they do without network, which is what is checked.
@Suite(.timeLimit(.minutes(2))) struct RealBridgeTests {
    @Test func startVersionAndPing() throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.realBridge, dir: dir))
        try client.start()
        try client.ping()
        let v = try client.version()
        #expect(v.sdkVersion == "1.1.0")
        #expect(!v.capabilities.isEmpty)
    }

    @Test func agentManagement() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.realBridge, dir: dir))
        let agents = try (0..<3).map { i in try client.createAgent(.init(model: "composer-2", name: "real-\(i)")) }
        var ids: [String] = []
        for try await a in client.agents(pageSize: 2) { ids.append(a.id) }
        #expect(Set(ids) == Set(agents.map(\.id)))
        #expect(try agents[0].info().name == "real-0")
        try agents[1].archive()
        #expect(try client.agentInfo(agents[1].id).archived)
        try client.unarchiveAgent(agents[1].id)
        #expect(try !agents[1].info().archived)
        try agents[2].delete()
        #expect { try client.agentInfo(agents[2].id) } throws: { ($0 as? CursorError)?.kind == .notFound }
        // Catalog calls need the backend: offline they fail with a typed error.
        #expect { try client.me() } throws: { $0 is CursorError }
    }

    @Test func offlineTurnFailsWithItsReason() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.realBridge, dir: dir))
        let agent = try client.createAgent(.init(model: "composer-2"))
        let run = try agent.send("Say hello")
        let events = try await collect(run)
        guard case .result(.error, _) = events.last else {
            Issue.record("last event: \(String(describing: events.last))")
            return
        }
        let result = try await run.result
        #expect(result.status == .error)
        #expect(result.errorMessage?.contains("API key exchange") == true)
        #expect(run.status == .error)
    }

    @Test func cancelOnTheRealBridge() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.realBridge, dir: dir))
        let agent = try client.createAgent(.init(model: "composer-2"))
        let run = try agent.send("Say hello")  // offline, it would fail only after ~16 s
        let start = ContinuousClock.now
        try run.cancel()
        let result = try await run.result
        // The status proves the cancel (the turn would end as .error by itself); the time bound
        // only guards against a hang: a loaded machine slows node's cancel to seconds (12.6 s seen).
        #expect(result.status == .cancelled)
        #expect(elapsed(since: start) < 30)
    }

    /// An agent made through the C API (another client, so another bridge process) is resumed
    /// from Swift; its queued first run is stale for this bridge, which the typed error names.
    @Test func agentFromCResumedInSwift() async throws {
        let dir = try TempDir()
        let options = testOptions(bridge: try Env.realBridge, dir: dir)
        var cClient: OpaquePointer?
        var cAgent: OpaquePointer?
        #expect(cursor_client_new(options.json.jsonText, &cClient, nil) == .CURSOR_OK)
        let c = try #require(cClient)
        #expect(cursor_agent_create(c, #"{"model":"composer-2","name":"from-c"}"#, &cAgent, nil) == .CURSOR_OK)
        let id = String(cString: cursor_agent_id(try #require(cAgent)))
        cursor_agent_free(cAgent)
        cursor_client_free(cClient)

        let client = try CursorClient(options)
        let agent = try client.resumeAgent(id, .init(model: "composer-2"))
        #expect(agent.id == id)
        #expect(try agent.info().name == "from-c")
        do {
            _ = try agent.send("Say hello")
            Issue.record("the send was not refused")
        } catch {
            #expect(error.kind == .staleRun)
            #expect(error.runId?.isEmpty == false)
            let staleRun = try #require(error.runId)
            try client.cancelRun(agentId: id, runId: staleRun)
        }
        let run = try agent.send("Say hello")
        try run.cancel()
        #expect(try await run.result.status == .cancelled)
    }
}
