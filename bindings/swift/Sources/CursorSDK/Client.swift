import CCursorSDK

/// A connection to a Cursor SDK bridge (`cursor-sdk-bridge`, a local Node server the library
/// launches on first use and stops when the client is freed). Thread-safe.
///
/// The calls here block their thread for one bridge call, bounded by
/// `ClientOptions.requestTimeout` (and the bridge's start, `startupTimeout`, on first use).
/// The paging sequences (`agents(…)`, `runs(…)`) and `Cursor.prompt` run their calls on their
/// own threads, so they never block a Swift concurrency thread.
public final class CursorClient: Sendable {
    // The library allows every client function from many threads at once.
    nonisolated(unsafe) let raw: OpaquePointer

    /// A client from options (all optional: see `ClientOptions`).
    public convenience init(_ options: ClientOptions = ClientOptions()) throws(CursorError) {
        try self.init(json: options.json.jsonText)
    }

    /// A client from raw options JSON (the library's `cursor_client_new` keys).
    public init(json: String) throws(CursorError) {
        var out: OpaquePointer?
        try check { cursor_client_new(json, &out, $0) }
        guard let out else { throw CursorError(kind: .internalError, message: "internal: no client") }
        raw = out
    }

    /// A client whose bridge keeps every local agent, run and event record in `store`.
    public init(_ options: ClientOptions = ClientOptions(), store: some AgentStore) throws(CursorError) {
        let box = StoreBox(store)
        let user = Unmanaged.passRetained(box).toOpaque()
        var out: OpaquePointer?
        do {
            try check { cursor_client_new_with_store(options.json.jsonText, storeTrampoline, user, releaseBox, &out, $0) }
        } catch {
            // On failure the library does not call user_data_free: the box is ours to release.
            Unmanaged<StoreBox>.fromOpaque(user).release()
            throw error
        }
        guard let out else { throw CursorError(kind: .internalError, message: "internal: no client") }
        raw = out
    }

    /// Stops the bridge this client launched (at most about a second) and releases every tool
    /// and store closure. Free agents and runs first: they keep the client alive until then.
    deinit { cursor_client_free(raw) }

    /// Starts the bridge now instead of on first use.
    public func start() throws(CursorError) { try check { cursor_client_start(raw, $0) } }

    /// Checks that the bridge is up and accepts our token.
    public func ping() throws(CursorError) { try check { cursor_client_ping(raw, $0) } }

    /// The bridge's version.
    public func version() throws(CursorError) -> BridgeVersion {
        BridgeVersion(try ownedJSON { cursor_client_version(raw, $0, $1) })
    }

    /// Stops a launched bridge now; later calls fail with `.usage`.
    public func shutdown() { cursor_client_shutdown(raw) }

    /// Creates an agent (`AgentOptions(cloud: nil)` is local, in `cwd` or the client's workspace).
    public func createAgent(_ options: AgentOptions = AgentOptions()) throws(CursorError) -> Agent {
        try createAgent(json: options.json.jsonText)
    }

    /// Creates an agent from raw `AgentOptions` JSON.
    public func createAgent(json: String) throws(CursorError) -> Agent {
        var out: OpaquePointer?
        try check { cursor_agent_create(raw, json, &out, $0) }
        return try Agent(client: self, raw: out)
    }

    /// Attaches to an existing agent (give its model, and for agents made elsewhere its cwd).
    public func resumeAgent(_ id: String, _ options: AgentOptions = AgentOptions()) throws(CursorError) -> Agent {
        var out: OpaquePointer?
        try check { cursor_agent_resume(raw, id, options.json.jsonText, &out, $0) }
        return try Agent(client: self, raw: out)
    }

    // MARK: agents and runs by id

    /// One agent's metadata.
    public func agentInfo(_ id: String, cwd: String? = nil) throws(CursorError) -> AgentInfo {
        AgentInfo(try ownedJSON { cursor_client_get_agent(raw, id, scope(cwd), $0, $1) })
    }

    /// The agents, newest first, fetched a page at a time as you iterate.
    public func agents(
        pageSize: Int? = nil, runtime: Runtime? = nil, cwd: String? = nil, includeArchived: Bool = false
    ) -> Paged<AgentInfo> {
        var o: [String: JSONValue] = ["includeArchived": .bool(includeArchived)]
        if let pageSize { o["limit"] = .number(Double(pageSize)) }
        if let runtime { o["runtime"] = .string(runtime.rawValue) }
        if let cwd { o["cwd"] = .string(cwd) }
        return Paged(client: self, options: o, map: AgentInfo.init) { raw, opts, out, err in
            cursor_client_list_agents(raw, opts, out, err)
        }
    }

    /// An agent's runs, a page at a time. Do not list while you stream a run of this agent
    /// (listing detaches the bridge's live handle).
    public func runs(agentId: String, pageSize: Int? = nil, cwd: String? = nil) -> Paged<RunInfo> {
        var o: [String: JSONValue] = [:]
        if let pageSize { o["limit"] = .number(Double(pageSize)) }
        if let cwd { o["cwd"] = .string(cwd) }
        return Paged(client: self, options: o, map: RunInfo.init) { raw, opts, out, err in
            cursor_client_list_runs(raw, agentId, opts, out, err)
        }
    }

    public func archiveAgent(_ id: String, cwd: String? = nil) throws(CursorError) {
        try check { cursor_client_archive_agent(raw, id, scope(cwd), $0) }
    }

    public func unarchiveAgent(_ id: String, cwd: String? = nil) throws(CursorError) {
        try check { cursor_client_unarchive_agent(raw, id, scope(cwd), $0) }
    }

    /// Deletes an agent and its data (`.failedPrecondition` while a run of it is live).
    public func deleteAgent(_ id: String, cwd: String? = nil) throws(CursorError) {
        try check { cursor_client_delete_agent(raw, id, scope(cwd), $0) }
    }

    /// A run's snapshot.
    public func runInfo(_ runId: String, agentId: String? = nil, cwd: String? = nil) throws(CursorError) -> RunInfo {
        var o: [String: JSONValue] = [:]
        if let agentId { o["agentId"] = .string(agentId) }
        if let cwd { o["cwd"] = .string(cwd) }
        let opts = JSONValue.object(o).jsonText
        return RunInfo(try ownedJSON { cursor_client_get_run(raw, runId, opts, $0, $1) })
    }

    /// Cancels any run by id: one this process has no handle of, or a stale one holding an
    /// agent (`CursorError.runId` of a `.staleRun` error).
    public func cancelRun(agentId: String, runId: String, cwd: String? = nil) throws(CursorError) {
        try check { cursor_client_cancel_run(raw, agentId, runId, scope(cwd), $0) }
    }

    /// A run's conversation document, as the bridge keeps it.
    public func conversation(runId: String) throws(CursorError) -> JSONValue {
        try ownedJSON { cursor_client_run_conversation(raw, runId, $0, $1) }
    }

    // MARK: catalog (needs the Cursor backend)

    /// The account of `apiKey` (default: the client's).
    public func me(apiKey: String? = nil) throws(CursorError) -> JSONValue {
        try ownedJSON { cursor_client_me(raw, apiKey, $0, $1) }
    }

    /// The models the account may use.
    public func models(apiKey: String? = nil) throws(CursorError) -> [ModelInfo] {
        (try ownedJSON { cursor_client_models(raw, apiKey, $0, $1) }).arrayValue?.map(ModelInfo.init) ?? []
    }

    /// The repositories cloud agents can use.
    public func repositories(apiKey: String? = nil) throws(CursorError) -> JSONValue {
        try ownedJSON { cursor_client_repositories(raw, apiKey, $0, $1) }
    }
}

/// `{"cwd": …}` or nothing.
private func scope(_ cwd: String?) -> String? {
    cwd.map { JSONValue.object(["cwd": .string($0)]).jsonText }
}

/// Where an agent runs.
public enum Runtime: String, Sendable {
    case local, cloud
}
