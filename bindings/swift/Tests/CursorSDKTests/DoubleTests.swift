import CursorSDK
import Foundation
import Testing

/// Against the bridge double (scripted turns: tools/bridge-double/README.md).
@Suite struct DoubleTests {
    @Test func streamsTextAndResult() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir))
        let agent = try client.createAgent(.init(model: "composer-2"))
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
        #expect(result.usage?.totalTokens == 180)
        #expect(run.status == .finished)
    }
}
