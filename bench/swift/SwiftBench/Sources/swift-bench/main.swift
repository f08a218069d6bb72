// swift-bench: measures cursor_sdk through the Swift binding. Prints one JSON object (the same
// shapes as bench_sdk) on stdout; any failure exits non-zero.
//   swift-bench ping   <client_options_json> <n>   n pings on one client (after 50 warm-ups): ns per call
//   swift-bench stream <client_options_json> <n>   scenario:long:<n> read through `run.events`
import CursorSDK
import Foundation

func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// A /proc/self/status figure in kB (0 where there is none).
func procKb(_ key: String) -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
    return 0
}

func ping(_ opts: String, _ n: Int) throws -> String {
    let client = try CursorClient(json: opts)
    for _ in 0..<50 { try client.ping() }
    var ns: [UInt64] = []
    ns.reserveCapacity(n)
    for _ in 0..<n {
        let t = nowNs()
        try client.ping()
        ns.append(nowNs() - t)
    }
    return "{\"ns\":[\(ns.map(String.init).joined(separator: ","))]}"
}

func stream(_ opts: String, _ n: Int) async throws -> String {
    let client = try CursorClient(json: opts)
    try client.ping()
    let agent = try client.createAgent(.init(model: "composer-2"))
    let rss0 = procKb("VmRSS")
    let t0 = nowNs()
    var first: UInt64 = 0
    var events = 0
    var assistant = 0
    let run = try agent.send("scenario:long:\(n)")
    for try await e in run.events {
        if first == 0 { first = nowNs() }
        events += 1
        if case .assistant = e { assistant += 1 }
    }
    let t1 = nowNs()
    guard assistant == n else { throw CursorError(kind: .internalError, message: "\(assistant) assistant events, expected \(n)") }
    return "{\"events\":\(events),\"assistant\":\(assistant),\"total_ns\":\(t1 - t0),\"first_event_ns\":\(first - t0),"
        + "\"rss_before_kb\":\(rss0),\"hwm_kb\":\(procKb("VmHWM"))}"
}

let args = CommandLine.arguments
guard args.count == 4, let n = Int(args[3]) else {
    FileHandle.standardError.write(Data("usage: swift-bench ping|stream <client_options_json> <n>\n".utf8))
    exit(2)
}
do {
    switch args[1] {
    case "ping": print(try ping(args[2], n))
    case "stream": print(try await stream(args[2], n))
    default: throw CursorError(kind: .invalidArgument, message: "unknown command \(args[1])")
    }
} catch {
    FileHandle.standardError.write(Data("swift-bench: \(error)\n".utf8))
    exit(1)
}
