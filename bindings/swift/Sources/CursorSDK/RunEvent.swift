import CCursorSDK

/// A run's status.
public enum RunStatus: Sendable, Hashable {
    case running, finished, error, cancelled, expired
    /// A status this binding does not know (a newer bridge), by name.
    case unknown(String)

    /// From a status name in any of the library's spellings (`"finished"`, `"FINISHED"`,
    /// `"RUN_LIFECYCLE_STATUS_FINISHED"`).
    public init(name: String) {
        let short = name.uppercased().replacingOccurrences(of: "RUN_LIFECYCLE_STATUS_", with: "")
        switch short {
        case "RUNNING", "CREATING", "QUEUED": self = .running
        case "FINISHED", "COMPLETED": self = .finished
        case "ERROR", "FAILED": self = .error
        case "CANCELLED", "CANCELED": self = .cancelled
        case "EXPIRED": self = .expired
        default: self = .unknown(name)
        }
    }

    init(_ s: cursor_run_status_t) {
        switch s {
        case .CURSOR_RUN_RUNNING: self = .running
        case .CURSOR_RUN_FINISHED: self = .finished
        case .CURSOR_RUN_ERROR: self = .error
        case .CURSOR_RUN_CANCELLED: self = .cancelled
        case .CURSOR_RUN_EXPIRED: self = .expired
        case .CURSOR_RUN_INVALID: self = .unknown("invalid")
        @unknown default: self = .unknown(String(s.rawValue))
        }
    }

    /// Whether the run is over.
    public var isTerminal: Bool { self != .running }
}

/// Token counts.
public struct TokenUsage: Sendable, Hashable {
    public var inputTokens: Int
    public var outputTokens: Int
    public var cacheReadTokens: Int
    public var cacheWriteTokens: Int
    public var totalTokens: Int

    /// From a usage object in either spelling (`input_tokens` in stream messages, `inputTokens`
    /// in results).
    init(_ j: JSONValue) {
        func n(_ snake: String, _ camel: String) -> Int { (j[snake] ?? j[camel])?.doubleValue.map { Int($0) } ?? 0 }
        inputTokens = n("input_tokens", "inputTokens")
        outputTokens = n("output_tokens", "outputTokens")
        cacheReadTokens = n("cache_read_tokens", "cacheReadTokens")
        cacheWriteTokens = n("cache_write_tokens", "cacheWriteTokens")
        totalTokens = n("total_tokens", "totalTokens")
    }
}

/// A tool call as the stream reports it (built-in tools and custom ones).
public struct ToolCallEvent: Sendable, Hashable {
    public var callId: String
    public var name: String
    /// `"running"`, `"completed"`, `"error"`…
    public var status: String
    public var args: JSONValue
    /// The outcome once completed (`{"status":"success","value":…}` or an error).
    public var result: JSONValue?
}

/// One event of a run. Cases cover what the bridge sends today; anything else arrives as
/// `.other` with its type and JSON, so a newer bridge never breaks a `switch`.
public enum RunEvent: Sendable, Hashable {
    /// A chunk of the assistant's reply.
    case assistant(text: String)
    case thinking(text: String)
    // Boxed: the largest case would otherwise set the size (and copying cost) of every event.
    indirect case toolCall(ToolCallEvent)
    /// The run's status changed; `message` explains a failure.
    case status(RunStatus, message: String?)
    case usage(TokenUsage)
    /// An interaction update (with `SendOptions.enableDeltas`): `"text-delta"` carries `text`.
    case delta(type: String, text: String?, payload: JSONValue)
    /// A conversation step (with `SendOptions.enableSteps`).
    case step(type: String, payload: JSONValue)
    /// The run's result record as the bridge sent it (`Run.result` gives the summary).
    case result(status: RunStatus, payload: JSONValue)
    case other(type: String, payload: JSONValue)

    /// Copies a library event (borrowed for the call). Only the kinds that need it pay for the
    /// event's JSON: assistant text comes from `cursor_event_text`.
    init(_ ev: OpaquePointer) {
        let kind = cursor_event_kind(ev)
        let ctype = cursor_event_type(ev)
        func text() -> String? { cursor_event_text(ev).map { String(cString: $0) } }
        // A stream's common event first, without a Swift string of its type.
        if kind == .CURSOR_EVENT_MESSAGE, cStringIs(ctype, "assistant") {
            self = .assistant(text: text() ?? "")
            return
        }
        let type = String(cString: ctype)
        func payload() -> JSONValue { (try? JSONValue(parsing: String(cString: cursor_event_json(ev)))) ?? .null }
        switch kind {
        case .CURSOR_EVENT_MESSAGE:
            switch type {
            case "assistant": self = .assistant(text: text() ?? "")
            case "thinking": self = .thinking(text: payload()["text"]?.stringValue ?? "")
            case "status":
                let p = payload()
                self = .status(RunStatus(name: p["status"]?.stringValue ?? ""), message: p["message"]?.stringValue)
            case "usage": self = .usage(TokenUsage(payload()["usage"] ?? .null))
            case "tool_call":
                let p = payload()
                self = .toolCall(
                    ToolCallEvent(
                        callId: p["call_id"]?.stringValue ?? "", name: p["name"]?.stringValue ?? "",
                        status: p["status"]?.stringValue ?? "", args: p["args"] ?? .null, result: p["result"]))
            default: self = .other(type: type, payload: payload())
            }
        case .CURSOR_EVENT_DELTA: self = .delta(type: type, text: text(), payload: payload())
        case .CURSOR_EVENT_STEP: self = .step(type: type, payload: payload())
        case .CURSOR_EVENT_RESULT:
            let p = payload()
            self = .result(status: RunStatus(name: p["status"]?.stringValue ?? ""), payload: p)
        case .CURSOR_EVENT_INVALID: self = .other(type: type, payload: payload())
        @unknown default: self = .other(type: type, payload: payload())
        }
    }
}

/// Whether the C string `p` is `s`, compared in place. The comparison stops at the first byte
/// that differs, which is at the latest `p`'s terminating NUL: nothing past it is read.
private func cStringIs(_ p: UnsafePointer<CChar>, _ s: StaticString) -> Bool {
    s.withUTF8Buffer { b in
        for i in 0..<b.count where UInt8(bitPattern: p[i]) != b[i] { return false }
        return p[b.count] == 0
    }
}

/// How a run ended.
public struct RunResult: Sendable, Hashable {
    public var runId: String
    public var agentId: String
    public var status: RunStatus
    /// The final assistant text.
    public var text: String
    public var model: String?
    public var duration: Duration
    public var usage: TokenUsage?
    /// Why the run failed (status `.error` or `.expired`).
    public var errorMessage: String?
    public var errorCode: String?
    /// Branches the run pushed (cloud agents).
    public var git: JSONValue?
    /// The whole result record.
    public var json: JSONValue

    init(json j: JSONValue) {
        runId = j["runId"]?.stringValue ?? ""
        agentId = j["agentId"]?.stringValue ?? ""
        status = RunStatus(name: j["status"]?.stringValue ?? "")
        text = j["text"]?.stringValue ?? ""
        model = j["model"]?.stringValue
        duration = .milliseconds(Int64(j["durationMs"]?.doubleValue ?? 0))
        usage = j["usage"].flatMap { $0.isNull ? nil : TokenUsage($0) }
        errorMessage = j["errorMessage"]?.stringValue
        errorCode = j["errorCode"]?.stringValue
        git = j["git"].flatMap { $0.isNull ? nil : $0 }
        json = j
    }
}
