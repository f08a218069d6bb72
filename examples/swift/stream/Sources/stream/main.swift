// Streams an agent's reply as it arrives, then prints how the run ended.
//   CURSOR_API_KEY=… swift run stream "Summarise README.md" [model]
import CursorSDK
import Foundation

let args = CommandLine.arguments
let prompt = args.count > 1 ? args[1] : "Summarise README.md in one paragraph"
let model = ModelSelection(args.count > 2 ? args[2] : "composer-2")

do {
    let client = try CursorClient()  // key from CURSOR_API_KEY, bridge found automatically
    let agent = try client.createAgent(.init(model: model, cwd: "."))
    let run = try agent.send(prompt)
    for try await text in run.text { print(text, terminator: "") }
    let result = try await run.result
    print("\n[\(result.status)] run \(result.runId)")
    if let reason = result.errorMessage { print("reason: \(reason)") }
} catch let error as CursorError {
    print("error (\(error.kind.name)): \(error.message)")
    exit(1)
}
