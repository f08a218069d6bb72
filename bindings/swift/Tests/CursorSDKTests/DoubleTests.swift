import CursorSDK
import Foundation
import Testing

/// Against the bridge double (scripted turns: tools/bridge-double/README.md).
@Suite(.timeLimit(.minutes(1))) struct DoubleTests {
    let dir: TempDir
    let client: CursorClient
    let agent: Agent

    init() throws {
        dir = try TempDir()
        client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        agent = try client.createAgent(.init(model: "composer-2"))
    }

    @Test func streamsTextAndResult() async throws {
        let run = try agent.send("hello")
        #expect(run.id.hasPrefix("run-"))
        var chunks: [String] = []
        for try await t in run.text { chunks.append(t) }
        #expect(chunks == ["Hello", " from", " the", " bridge", " double."])
        let result = try await run.result
        #expect(result.status == .finished)
        #expect(result.text == "Hello from the bridge double.")
        #expect(result.runId == run.id)
        #expect(result.agentId == agent.id)
        #expect(result.model == "composer-2")
        #expect(result.usage?.totalTokens == 180)
        #expect(run.status == .finished)
        // The run keeps its events: a second reader sees them all, ending with the result.
        let events = try await collect(run)
        #expect(events.count == 13)
        guard case .result(.finished, _) = events.last else {
            Issue.record("last event is \(String(describing: events.last))")
            return
        }
    }

    @Test func everyEventKind() async throws {
        let run = try agent.send("hello", .init(enableDeltas: true, enableSteps: true))
        let events = try await collect(run)
        var seen: Set<String> = []
        for e in events {
            switch e {
            case .assistant(let t): #expect(!t.isEmpty); seen.insert("assistant")
            case .thinking(let t): #expect(t == "Planning a short greeting."); seen.insert("thinking")
            case .toolCall(let c):
                #expect(c.name == "read_file")
                #expect(c.args["path"] == "README.md")
                #expect(c.callId == "call-double-1")
                if c.status == "completed" { #expect(c.result?["status"] == "success") }
                seen.insert("tool_call")
            case .status(let s, _): #expect(s == .running || s == .finished); seen.insert("status")
            case .usage(let u): #expect(u.inputTokens == 120 && u.outputTokens == 45); seen.insert("usage")
            case .delta(let type, _, _): seen.insert("delta:" + type)
            case .step(let type, _): #expect(!type.isEmpty); seen.insert("step")
            case .result(let s, let payload): #expect(s == .finished); #expect(payload["runId"] != nil); seen.insert("result")
            case .other(let type, let payload): #expect(payload["type"]?.stringValue == type); seen.insert("other:" + type)
            }
        }
        #expect(seen.isSuperset(of: [
            "assistant", "thinking", "tool_call", "status", "usage", "delta:text-delta", "step", "result", "other:system",
        ]))
        // With deltas on, `text` yields the deltas (not the assistant messages too).
        var text = ""
        for try await t in run.text { text += t }
        #expect(text == "Hello from the bridge double.")
    }

    @Test func unknownEventTypesPassThrough() async throws {
        let events = try await collect(try agent.send("scenario:unknown"))
        #expect(events.contains { if case .other("future_type", _) = $0 { true } else { false } })
        #expect(events.filter { if case .assistant = $0 { true } else { false } }.count == 2)
    }

    @Test func failedTurnHasItsReason() async throws {
        let run = try agent.send("scenario:fail")
        let events = try await collect(run)
        #expect(events.contains {
            if case .status(.error, let m?) = $0 { m.contains("scripted failure") } else { false }
        })
        let result = try await run.result
        #expect(result.status == .error)
        #expect(result.errorMessage?.contains("scripted failure") == true)
        #expect(run.status == .error)
        var statuses: [RunStatus] = []
        for try await s in run.statusUpdates { statuses.append(s) }
        #expect(statuses == [.running, .error])
    }

    @Test func cancelEndsTheRun() async throws {
        let run = try agent.send("scenario:slow:50")
        var it = run.text.makeAsyncIterator()
        #expect(try await it.next()?.hasPrefix("chunk ") == true)
        let start = ContinuousClock.now
        try run.cancel()
        try run.cancel()  // idempotent
        let result = try await run.result
        #expect(elapsed(since: start) < 10)  // milliseconds normally; generous on a loaded machine
        #expect(result.status == .cancelled)
        #expect(run.status == .cancelled)
    }

    @Test func cancellingTheReaderLeavesTheRun() async throws {
        let run = try agent.send("scenario:slow:50")
        let reader = Task { try await collect(run) }
        try await Task.sleep(for: .milliseconds(200))
        let start = ContinuousClock.now
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        // Far below the run's 60 s: the reader's task ends without waiting for the run.
        #expect(elapsed(since: start) < 5)
        #expect(run.status == .running)  // the bridge's run goes on
        var it = run.events.makeAsyncIterator()
        #expect(try await it.next() != nil)  // and can still be read
        try run.cancel()
        #expect(try await run.result.status == .cancelled)
    }

    @Test func droppedStreamIsRecovered() async throws {
        let run = try agent.send("scenario:drop:3")
        var text = ""
        for try await t in run.text { text += t }
        #expect(text == "Hello from the bridge double.")
        #expect(try await run.result.status == .finished)
    }

    @Test func errorsByKind() async throws {
        // A busy agent: a second send while a run streams.
        let slow = try agent.send("scenario:slow:50")
        #expect { try agent.send("again") } throws: { ($0 as? CursorError)?.kind == .busy }
        try slow.cancel()
        _ = try await slow.result

        // Unknown option keys name the key.
        #expect {
            try client.createAgent(.init(model: "composer-2", local: .init(extra: ["cwdd": "/x"])))
        } throws: { e in
            guard let e = e as? CursorError else { return false }
            return e.kind == .invalidArgument && e.message.contains("cwdd")
        }
        // An unknown agent.
        #expect { try client.resumeAgent("agent-00000000-0000-0000-0000-000000000000", .init(model: "composer-2")) }
            throws: { e in
                guard let e = e as? CursorError else { return false }
                return e.kind == .notFound && e.connectCode == "not_found"
            }
        // A model the catalog does not have.
        #expect { try client.createAgent(.init(model: "no-such-model")) } throws: { e in
            (e as? CursorError)?.message.contains("no-such-model") == true
        }
        // No bridge there.
        let broken = try CursorClient(.init(apiKey: "k", bridgePath: dir.path + "/missing-bridge", workspace: dir.path))
        #expect { try broken.ping() } throws: { ($0 as? CursorError)?.kind == .bridgeStartFailed }
        // Raw JSON that is not JSON.
        #expect { try CursorClient(json: "{nope") } throws: { ($0 as? CursorError)?.kind == .invalidArgument }
    }

    @Test func management() async throws {
        let others = try (0..<2).map { i in try client.createAgent(.init(model: "composer-2", name: "swift-\(i)")) }
        var ids: [String] = []
        for try await info in client.agents(pageSize: 1) { ids.append(info.id) }
        #expect(Set(ids) == Set([agent.id] + others.map(\.id)))
        #expect(ids.count == 3)  // no duplicates across pages

        let info = try others[0].info()
        #expect(info.id == others[0].id)
        #expect(info.name == "swift-0")
        #expect(try client.agentInfo(others[1].id).name == "swift-1")

        try client.archiveAgent(others[0].id)
        #expect(try others[0].info().archived)
        var archived: [String] = []
        for try await a in client.agents(includeArchived: true) where a.archived { archived.append(a.id) }
        #expect(archived == [others[0].id])
        try others[0].unarchive()
        #expect(try !others[0].info().archived)

        _ = try await agent.send("hello").result
        var runs: [RunInfo] = []
        for try await r in client.runs(agentId: agent.id) { runs.append(r) }
        #expect(runs.contains { $0.status == .finished })
        #expect(try agent.messages().count >= 1)

        let artifacts = try agent.artifacts()
        #expect(artifacts.map(\.path) == ["artifacts/report.txt"])
        #expect(try agent.downloadArtifact("artifacts/report.txt").count == 100_000)

        #expect(try agent.usage()["usage"] != nil)

        try client.deleteAgent(others[1].id)
        #expect { try client.agentInfo(others[1].id) } throws: { ($0 as? CursorError)?.kind == .notFound }
    }

    @Test func versionAndPing() throws {
        try client.ping()
        let v = try client.version()
        #expect(v.protocolVersion.isEmpty == false)
        #expect(Cursor.libraryVersion == "0.1.0")
    }
}

/// Readers suspend instead of blocking: many runs read at once on a cooperative pool of a few
/// threads, while a ticking task keeps its pace. (scripts/swift-test.sh runs this suite alone.)
@Suite(.timeLimit(.minutes(1))) struct ConcurrencyTests {
    @Test func readersNeverBlockThePool() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        let runs = try (0..<16).map { _ in try client.createAgent(.init(model: "composer-2")).send("scenario:slow:20") }
        let start = ContinuousClock.now
        let ticks = Task {
            var n = 0
            while !Task.isCancelled && elapsed(since: start) < 1 {
                try? await Task.sleep(for: .milliseconds(10))
                n += 1
            }
            return n
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for run in runs {
                group.addTask {
                    var n = 0
                    for try await _ in run.text {
                        n += 1
                        if n == 10 { try run.cancel() }
                    }
                    return n
                }
            }
            for try await n in group { #expect(n >= 10) }
        }
        // 16 readers on a 2-core pool: a blocked reader would hold a pool thread for the whole run.
        let n = await ticks.value
        #expect(n > 20, "the ticking task ran \(n) times in 1 s")
        for run in runs { #expect(try await run.result.status == .cancelled) }
    }

    @Test func droppedRunsFreeTheirHandles() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        let agent = try client.createAgent(.init(model: "composer-2"))
        weak var watched: Run?
        do {
            let run = try agent.send("scenario:slow:20")
            watched = run
            var it = run.events.makeAsyncIterator()
            _ = try await it.next()
            try run.cancel()
        }
        // Dropping the run (half read, its pump running) freed it: nothing kept it alive.
        #expect(watched == nil)
        // The agent is free again once the cancelled run is over in the bridge (the cancel went
        // out although the handle was freed at once; generous bound: the machine is shared).
        var sent: Run?
        for _ in 0..<500 where sent == nil {
            do { sent = try agent.send("hello") } catch {
                #expect(error.kind == .busy)
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let run = try #require(sent)
        #expect(try await run.result.status == .finished)
    }
}

/// A fast stream arrives whole and in order, over many drain passes.
@Suite(.timeLimit(.minutes(1))) struct LongStreamTests {
    @Test func longStreamArrivesWhole() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        let run = try client.createAgent(.init(model: "composer-2")).send("scenario:long:20000")
        var i = 0
        var inOrder = true
        for try await t in run.text {
            if t != "t\(i) " { inOrder = false }
            i += 1
        }
        #expect(i == 20000)
        #expect(inOrder)
        #expect(try await run.result.status == .finished)
    }
}
