import CCursorSDK

/// An agent: a conversation the bridge keeps (locally, or in Cursor's cloud). Thread-safe; one
/// run at a time (a send while a run is active fails with `.busy`). Calls block for one bridge
/// call, bounded by the client's `requestTimeout`.
public final class Agent: Sendable {
    /// Keeps the client (and its bridge) alive while the agent is used.
    public let client: CursorClient
    // The library allows every agent function from several threads.
    nonisolated(unsafe) let raw: OpaquePointer
    public let id: String

    init(client: CursorClient, raw: OpaquePointer?) throws(CursorError) {
        guard let raw else { throw CursorError(kind: .internalError, message: "internal: no agent") }
        self.client = client
        self.raw = raw
        id = String(cString: cursor_agent_id(raw))
    }

    /// Frees the handle (the agent lives on in the bridge; see `close()`).
    deinit { cursor_agent_free(raw) }

    /// Sends a message; returns once the run's stream is open (errors such as a busy agent or an
    /// unknown model are thrown here).
    public func send(_ message: UserMessage, _ options: SendOptions = SendOptions()) throws(CursorError) -> Run {
        var out: OpaquePointer?
        try check { cursor_agent_send(raw, message.wire, options.json.jsonText, &out, $0) }
        guard let out else { throw CursorError(kind: .internalError, message: "internal: no run") }
        return Run(client: client, raw: out, agentId: id, deltas: options.enableDeltas ?? false)
    }

    /// Sends a message given as a string.
    public func send(_ text: String, _ options: SendOptions = SendOptions()) throws(CursorError) -> Run {
        try send(UserMessage(text), options)
    }

    /// Releases the bridge's in-memory agent (its durable state stays; resume brings it back).
    public func close() throws(CursorError) { try check { cursor_agent_close(raw, $0) } }
    /// Reloads the agent's durable state.
    public func reload() throws(CursorError) { try check { cursor_agent_reload(raw, $0) } }
    public func archive() throws(CursorError) { try check { cursor_agent_archive(raw, $0) } }
    public func unarchive() throws(CursorError) { try check { cursor_agent_unarchive(raw, $0) } }
    /// Deletes the agent and its data (`.failedPrecondition` while a run is live).
    public func delete() throws(CursorError) { try check { cursor_agent_delete(raw, $0) } }

    /// The agent's metadata.
    public func info() throws(CursorError) -> AgentInfo {
        AgentInfo(try ownedJSON { cursor_agent_info(raw, $0, $1) })
    }

    /// The recorded messages (`AgentMessage` records).
    public func messages(limit: Int? = nil, offset: Int? = nil) throws(CursorError) -> [JSONValue] {
        var o: [String: JSONValue] = [:]
        if let limit { o["limit"] = .number(Double(limit)) }
        if let offset { o["offset"] = .number(Double(offset)) }
        let opts = JSONValue.object(o).jsonText
        return (try ownedJSON { cursor_agent_messages(raw, opts, $0, $1) }).arrayValue ?? []
    }

    /// The files the agent produced.
    public func artifacts() throws(CursorError) -> [Artifact] {
        (try ownedJSON { cursor_agent_artifacts(raw, $0, $1) }).arrayValue?.map(Artifact.init) ?? []
    }

    /// One artifact's bytes.
    public func downloadArtifact(_ path: String) throws(CursorError) -> [UInt8] {
        var data: UnsafeMutablePointer<UInt8>?
        var len = 0
        try check { cursor_agent_download_artifact(raw, path, &data, &len, $0) }
        defer { cursor_bytes_free(data, len) }
        guard let data else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: len))
    }

    /// Token usage and cost, of one run when `runId` is given (cloud agents).
    public func usage(runId: String? = nil) throws(CursorError) -> JSONValue {
        try ownedJSON { cursor_agent_usage(raw, runId, $0, $1) }
    }
}
