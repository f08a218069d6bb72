import CursorSDK
import Foundation
import Testing

/// The option types encode to JSON the library accepts (it refuses unknown keys, naming them).
@Suite(.timeLimit(.minutes(1))) struct OptionsTests {
    @Test func jsonValueRoundTrips() throws {
        let v: JSONValue = ["a": [1, 2.5, "x\n\"y\"", true, nil], "b": ["c": -3]]
        #expect(v.jsonText == #"{"a":[1,2.5,"x\n\"y\"",true,null],"b":{"c":-3}}"#)
        #expect(try JSONValue(parsing: v.jsonText) == v)
        #expect(try JSONValue(parsing: "true") == .bool(true))
        #expect(try JSONValue(parsing: "1") == .number(1))
        #expect(throws: CursorError.self) { try JSONValue(parsing: "{") }
    }

    @Test func encodings() {
        #expect(ModelSelection("m", params: ["effort": "high"]).json == ["id": "m", "params": [["id": "effort", "value": "high"]]])
        #expect(ClientOptions(requestTimeout: .seconds(2), maxRetries: 3).json == ["requestTimeoutMs": 2000, "maxRetries": 3])
        // Text that looks like JSON is sent as a message object, never read as one.
        #expect(UserMessage(#"{"text":"x"}"#).images.isEmpty)
    }

    @Test func optionsTheLibraryAccepts() async throws {
        let dir = try TempDir()
        let client = try CursorClient(testOptions(bridge: Env.double, dir: dir) {
            $0.requestTimeout = .seconds(30)
            $0.startupTimeout = .seconds(30)
            $0.maxRetries = 1
        })
        let agent = try client.createAgent(
            .init(
                model: "composer-2", name: "opts", cwd: dir.path,
                local: .init(settingSources: ["project"], sandbox: false, autoReview: false),
                mcpServers: ["fs": .stdio(command: "true", args: ["-x"]), "web": .http(url: "http://127.0.0.1:9", sse: true)],
                agents: ["helper": .init(description: "d", prompt: "p")], mode: .agent, disallowedTools: ["shell"]))
        #expect(try agent.info().name == "opts")
        // A JSON-looking text and an image go out as a UserMessage object.
        let run = try agent.send(
            UserMessage(#"{"not": "json to the library"}"#, images: [.data(base64: "AAAA", mimeType: "image/png")]),
            .init(mode: .plan, enableDeltas: false, force: true))
        #expect(try await run.result.status == .finished)
        #expect { try client.createAgent(.init(model: "composer-2", extra: ["bogusKey": 1])) } throws: { e in
            (e as? CursorError)?.message.contains("bogusKey") == true
        }
    }
}
