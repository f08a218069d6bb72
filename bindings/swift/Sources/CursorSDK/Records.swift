import CCursorSDK
import Foundation

/// The bridge's version.
public struct BridgeVersion: Sendable, Hashable {
    public var bridgeVersion: String
    public var protocolVersion: String
    public var capabilities: [String]
    /// The cursor-sdk release the launched bridge ships in (`nil` when attached or unknown).
    public var sdkVersion: String?
    public var json: JSONValue

    init(_ j: JSONValue) {
        bridgeVersion = j["bridgeVersion"]?.stringValue ?? ""
        protocolVersion = j["protocolVersion"]?.stringValue ?? ""
        capabilities = j["capabilities"]?.arrayValue?.compactMap(\.stringValue) ?? []
        sdkVersion = j["sdkVersion"]?.stringValue
        json = j
    }
}

/// An agent's metadata.
public struct AgentInfo: Sendable, Hashable {
    public var id: String
    public var name: String
    public var summary: String
    public var archived: Bool
    /// The local agent's directory.
    public var cwd: String?
    /// The whole record (`SdkAgentInfo`).
    public var json: JSONValue

    init(_ j: JSONValue) {
        id = j["agentId"]?.stringValue ?? ""
        name = j["name"]?.stringValue ?? ""
        summary = j["summary"]?.stringValue ?? ""
        archived = j["archived"]?.boolValue ?? false
        cwd = j["local"]?["cwd"]?.stringValue
        json = j
    }
}

/// A run's snapshot.
public struct RunInfo: Sendable, Hashable {
    public var id: String
    public var agentId: String
    public var status: RunStatus
    /// The whole record (`RunSnapshot`).
    public var json: JSONValue

    init(_ j: JSONValue) {
        id = j["runId"]?.stringValue ?? ""
        agentId = j["agentId"]?.stringValue ?? ""
        status = RunStatus(name: j["status"]?.stringValue ?? "")
        json = j
    }
}

/// A model of the catalog.
public struct ModelInfo: Sendable, Hashable {
    public var id: String
    public var displayName: String
    public var json: JSONValue

    init(_ j: JSONValue) {
        id = j["id"]?.stringValue ?? ""
        displayName = j["displayName"]?.stringValue ?? ""
        json = j
    }
}

/// A file an agent produced.
public struct Artifact: Sendable, Hashable {
    public var path: String
    public var sizeBytes: Int
    public var updatedAt: String

    init(_ j: JSONValue) {
        path = j["path"]?.stringValue ?? ""
        sizeBytes = j["sizeBytes"]?.intValue ?? Int(j["sizeBytes"]?.stringValue ?? "") ?? 0
        updatedAt = j["updatedAt"]?.stringValue ?? ""
    }
}

/// A listing fetched a page at a time as it is iterated; each page is one bridge call, made on
/// its own thread (never a Swift concurrency thread).
public struct Paged<Element: Sendable>: AsyncSequence, Sendable {
    typealias Fetch = @Sendable (
        OpaquePointer, String, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, UnsafeMutablePointer<OpaquePointer?>
    ) -> cursor_status

    let client: CursorClient
    let options: [String: JSONValue]
    let map: @Sendable (JSONValue) -> Element
    let fetch: Fetch

    init(
        client: CursorClient, options: [String: JSONValue], map: @escaping @Sendable (JSONValue) -> Element,
        fetch: @escaping Fetch
    ) {
        self.client = client
        self.options = options
        self.map = map
        self.fetch = fetch
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let paged: Paged
        var buffer: [Element] = []
        var cursor: String?
        var done = false

        public mutating func next() async throws -> Element? {
            while buffer.isEmpty {
                if done { return nil }
                var opts = paged.options
                if let cursor { opts["cursor"] = .string(cursor) }
                let text = JSONValue.object(opts).jsonText
                let p = paged
                let page = try await offThePool { () throws(CursorError) in
                    try ownedJSON { out, err in p.fetch(p.client.raw, text, out, err) }
                }
                buffer = (page["items"]?.arrayValue ?? []).map(paged.map).reversed()
                cursor = page["nextCursor"]?.stringValue
                done = cursor?.isEmpty ?? true
            }
            return buffer.popLast()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(paged: self) }
}

/// Runs a blocking library call on a thread of its own and suspends until it returns, so that
/// no Swift concurrency thread waits on the bridge.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws(CursorError) -> T) async throws(CursorError) -> T {
    let r: Result<T, CursorError> = await withCheckedContinuation { c in
        Thread { c.resume(returning: Result(catching: body)) }.start()
    }
    return try r.get()
}
