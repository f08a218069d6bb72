/// Options are plain values encoded to the JSON the library takes (its shorthands: a model by id,
/// `cwd` for `local.cwd`, modes by short name). Each has `extra`, raw members merged in last, for
/// fields these types do not cover yet; the library refuses unknown keys, naming them.

/// Builds a JSON object from optional members, dropping the `nil` ones.
private func object(_ members: [(String, JSONValue?)], extra: [String: JSONValue]) -> JSONValue {
    var o: [String: JSONValue] = [:]
    for (k, v) in members {
        if let v { o[k] = v }
    }
    o.merge(extra) { _, raw in raw }
    return .object(o)
}

private func ms(_ d: Duration?) -> JSONValue? {
    guard let d else { return nil }
    let (s, atto) = d.components
    return .number(Double(s * 1000 + atto / 1_000_000_000_000_000))
}

private func strings(_ a: [String]?) -> JSONValue? { a.map { .array($0.map(JSONValue.string)) } }
private func stringMap(_ m: [String: String]?) -> JSONValue? { m.map { .object($0.mapValues(JSONValue.string)) } }

/// How a client finds and talks to its bridge. Every member is optional; the defaults find the
/// bridge (`CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`), use the current directory
/// as the workspace and take the API key from `CURSOR_API_KEY`.
public struct ClientOptions: Sendable, Hashable {
    public var apiKey: String?
    public var bridgePath: String?
    public var workspace: String?
    /// Attach to a running bridge (`http://host:port`) instead of launching one.
    public var bridgeURL: String?
    public var bridgeToken: String?
    public var startupTimeout: Duration?
    /// The bound of every call to the bridge, retries included.
    public var requestTimeout: Duration?
    /// A stream with no frame (event or keepalive) whole within this long is dead.
    public var streamIdleTimeout: Duration?
    /// How often read-only calls are retried on transient failures (0...10).
    public var maxRetries: Int?
    public var toolTimeout: Duration?
    /// The bridge's own stderr lines go to the log at debug level.
    public var verbose: Bool?
    /// Start the bridge in `CursorClient.init` instead of on first use.
    public var eager: Bool?
    public var bridgeEnv: [String: String]?
    public var bridgeArgs: [String]?
    public var localStore: JSONValue?
    public var extra: [String: JSONValue]

    public init(
        apiKey: String? = nil, bridgePath: String? = nil, workspace: String? = nil,
        bridgeURL: String? = nil, bridgeToken: String? = nil, startupTimeout: Duration? = nil,
        requestTimeout: Duration? = nil, streamIdleTimeout: Duration? = nil, maxRetries: Int? = nil,
        toolTimeout: Duration? = nil, verbose: Bool? = nil, eager: Bool? = nil,
        bridgeEnv: [String: String]? = nil, bridgeArgs: [String]? = nil, localStore: JSONValue? = nil,
        extra: [String: JSONValue] = [:]
    ) {
        self.apiKey = apiKey
        self.bridgePath = bridgePath
        self.workspace = workspace
        self.bridgeURL = bridgeURL
        self.bridgeToken = bridgeToken
        self.startupTimeout = startupTimeout
        self.requestTimeout = requestTimeout
        self.streamIdleTimeout = streamIdleTimeout
        self.maxRetries = maxRetries
        self.toolTimeout = toolTimeout
        self.verbose = verbose
        self.eager = eager
        self.bridgeEnv = bridgeEnv
        self.bridgeArgs = bridgeArgs
        self.localStore = localStore
        self.extra = extra
    }

    public var json: JSONValue {
        object(
            [
                ("apiKey", apiKey.map(JSONValue.string)), ("bridgePath", bridgePath.map(JSONValue.string)),
                ("workspace", workspace.map(JSONValue.string)), ("bridgeUrl", bridgeURL.map(JSONValue.string)),
                ("bridgeToken", bridgeToken.map(JSONValue.string)), ("startupTimeoutMs", ms(startupTimeout)),
                ("requestTimeoutMs", ms(requestTimeout)), ("streamIdleTimeoutMs", ms(streamIdleTimeout)),
                ("maxRetries", maxRetries.map { .number(Double($0)) }), ("toolTimeoutMs", ms(toolTimeout)),
                ("verbose", verbose.map(JSONValue.bool)), ("eager", eager.map(JSONValue.bool)),
                ("bridgeEnv", stringMap(bridgeEnv)), ("bridgeArgs", strings(bridgeArgs)),
                ("localStore", localStore),
            ], extra: extra)
    }
}

/// A model, by id, with optional parameters (`"composer-2"` works as a literal).
public struct ModelSelection: Sendable, Hashable, ExpressibleByStringLiteral {
    public var id: String
    public var params: [String: String]

    public init(_ id: String, params: [String: String] = [:]) {
        self.id = id
        self.params = params
    }

    public init(stringLiteral value: String) { self.init(value) }

    public var json: JSONValue {
        if params.isEmpty { return .string(id) }
        let list = params.keys.sorted().map { k -> JSONValue in ["id": .string(k), "value": .string(params[k] ?? "")] }
        return ["id": .string(id), "params": .array(list)]
    }
}

/// The conversation mode.
public enum AgentMode: String, Sendable, Hashable {
    case agent, plan
}

/// An MCP server the agent may use.
public enum McpServer: Sendable, Hashable {
    case stdio(command: String, args: [String] = [], env: [String: String] = [:], cwd: String? = nil)
    case http(url: String, headers: [String: String] = [:], sse: Bool = false)

    public var json: JSONValue {
        switch self {
        case let .stdio(command, args, env, cwd):
            return ["stdio": object(
                [("command", .string(command)), ("args", strings(args)), ("env", stringMap(env)),
                 ("cwd", cwd.map(JSONValue.string))], extra: [:])]
        case let .http(url, headers, sse):
            return ["http": ["url": .string(url), "headers": stringMap(headers) ?? [:], "type": sse ? "sse" : "http"]]
        }
    }
}

/// Options of a local agent (one running on this machine, in `cwd`).
public struct LocalOptions: Sendable, Hashable {
    public var cwd: String?
    /// More workspace folders (multi-root).
    public var dirs: [String]?
    /// Which settings apply: `"project"`, `"user"`, `"team"`, `"mdm"`, `"plugins"`.
    public var settingSources: [String]?
    public var sandbox: Bool?
    public var autoReview: Bool?
    public var extra: [String: JSONValue]

    public init(
        cwd: String? = nil, dirs: [String]? = nil, settingSources: [String]? = nil, sandbox: Bool? = nil,
        autoReview: Bool? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.cwd = cwd
        self.dirs = dirs
        self.settingSources = settingSources
        self.sandbox = sandbox
        self.autoReview = autoReview
        self.extra = extra
    }

    public var json: JSONValue {
        object(
            [("cwd", cwd.map(JSONValue.string)), ("dirs", strings(dirs)), ("settingSources", strings(settingSources)),
             ("sandboxOptions", sandbox.map { ["enabled": .bool($0)] }), ("autoReview", autoReview.map(JSONValue.bool))],
            extra: extra)
    }
}

/// Options of a cloud agent (one running in Cursor's cloud on a repository).
public struct CloudOptions: Sendable, Hashable {
    public struct Repository: Sendable, Hashable {
        public var url: String
        public var startingRef: String?
        public var prURL: String?
        public init(url: String, startingRef: String? = nil, prURL: String? = nil) {
            self.url = url
            self.startingRef = startingRef
            self.prURL = prURL
        }
    }

    public var repos: [Repository]
    /// A named environment pool (`nil`: the default cloud environment).
    public var pool: String?
    public var workOnCurrentBranch: Bool?
    public var autoCreatePR: Bool?
    public var envVars: [String: String]?
    public var metadata: [String: String]?
    public var extra: [String: JSONValue]

    public init(
        repos: [Repository] = [], pool: String? = nil, workOnCurrentBranch: Bool? = nil, autoCreatePR: Bool? = nil,
        envVars: [String: String]? = nil, metadata: [String: String]? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.repos = repos
        self.pool = pool
        self.workOnCurrentBranch = workOnCurrentBranch
        self.autoCreatePR = autoCreatePR
        self.envVars = envVars
        self.metadata = metadata
        self.extra = extra
    }

    public var json: JSONValue {
        let repoList = repos.map { r in
            object(
                [("url", .string(r.url)), ("startingRef", r.startingRef.map(JSONValue.string)),
                 ("prUrl", r.prURL.map(JSONValue.string))], extra: [:])
        }
        return object(
            [("repos", .array(repoList)), ("env", pool.map { ["type": "pool", "name": .string($0)] }),
             ("workOnCurrentBranch", workOnCurrentBranch.map(JSONValue.bool)),
             ("autoCreatePr", autoCreatePR.map(JSONValue.bool)), ("envVars", stringMap(envVars)),
             ("metadata", stringMap(metadata))], extra: extra)
    }
}

/// A named sub-agent the agent may delegate to.
public struct AgentDefinition: Sendable, Hashable {
    public var description: String
    public var prompt: String
    /// `nil`: inherit the parent's model.
    public var model: ModelSelection?

    public init(description: String, prompt: String, model: ModelSelection? = nil) {
        self.description = description
        self.prompt = prompt
        self.model = model
    }

    var json: JSONValue {
        ["description": .string(description), "prompt": .string(prompt), "model": model?.json ?? "inherit"]
    }
}

/// How to create (or resume) an agent. `cloud == nil` makes a local agent.
public struct AgentOptions: Sendable, Hashable {
    public var model: ModelSelection?
    public var name: String?
    /// The local agent's working directory (shorthand for `local.cwd`; relative to the process).
    public var cwd: String?
    public var apiKey: String?
    public var local: LocalOptions?
    public var cloud: CloudOptions?
    public var mcpServers: [String: McpServer]
    public var agents: [String: AgentDefinition]
    public var mode: AgentMode?
    /// Only these built-in tools (`nil`: the default set).
    public var tools: [String]?
    public var disallowedTools: [String]?
    /// Makes a cloud create safe to retry.
    public var idempotencyKey: String?
    /// Take the agent over from a run no bridge of this client runs (see `CursorError.Kind.staleRun`).
    public var reclaimStaleRuns: Bool?
    public var extra: [String: JSONValue]

    public init(
        model: ModelSelection? = nil, name: String? = nil, cwd: String? = nil, apiKey: String? = nil,
        local: LocalOptions? = nil, cloud: CloudOptions? = nil, mcpServers: [String: McpServer] = [:],
        agents: [String: AgentDefinition] = [:], mode: AgentMode? = nil, tools: [String]? = nil,
        disallowedTools: [String]? = nil, idempotencyKey: String? = nil, reclaimStaleRuns: Bool? = nil,
        extra: [String: JSONValue] = [:]
    ) {
        self.model = model
        self.name = name
        self.cwd = cwd
        self.apiKey = apiKey
        self.local = local
        self.cloud = cloud
        self.mcpServers = mcpServers
        self.agents = agents
        self.mode = mode
        self.tools = tools
        self.disallowedTools = disallowedTools
        self.idempotencyKey = idempotencyKey
        self.reclaimStaleRuns = reclaimStaleRuns
        self.extra = extra
    }

    public var json: JSONValue {
        object(
            [
                ("model", model?.json), ("name", name.map(JSONValue.string)), ("cwd", cwd.map(JSONValue.string)),
                ("apiKey", apiKey.map(JSONValue.string)), ("local", local?.json), ("cloud", cloud?.json),
                ("mcpServers", mcpServers.isEmpty ? nil : .object(mcpServers.mapValues(\.json))),
                ("agents", agents.isEmpty ? nil : .object(agents.mapValues(\.json))),
                ("mode", mode.map { .string($0.rawValue) }), ("tools", strings(tools)),
                ("disallowedTools", strings(disallowedTools)), ("idempotencyKey", idempotencyKey.map(JSONValue.string)),
                ("reclaimStaleRuns", reclaimStaleRuns.map(JSONValue.bool)),
            ], extra: extra)
    }
}

/// Per-send options.
public struct SendOptions: Sendable, Hashable {
    /// Switches the model (for this and later sends).
    public var model: ModelSelection?
    public var mode: AgentMode?
    public var mcpServers: [String: McpServer]
    /// Stream `.delta` events (text-delta…); `Run.text` then yields the deltas.
    public var enableDeltas: Bool?
    public var enableSteps: Bool?
    /// Local agents: send even when the agent looks busy.
    public var force: Bool?
    /// Cloud agents: environment variables for this run.
    public var envVars: [String: String]?
    public var idempotencyKey: String?
    public var reclaimStaleRuns: Bool?
    public var extra: [String: JSONValue]

    public init(
        model: ModelSelection? = nil, mode: AgentMode? = nil, mcpServers: [String: McpServer] = [:],
        enableDeltas: Bool? = nil, enableSteps: Bool? = nil, force: Bool? = nil, envVars: [String: String]? = nil,
        idempotencyKey: String? = nil, reclaimStaleRuns: Bool? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.model = model
        self.mode = mode
        self.mcpServers = mcpServers
        self.enableDeltas = enableDeltas
        self.enableSteps = enableSteps
        self.force = force
        self.envVars = envVars
        self.idempotencyKey = idempotencyKey
        self.reclaimStaleRuns = reclaimStaleRuns
        self.extra = extra
    }

    public var json: JSONValue {
        object(
            [
                ("model", model?.json), ("mode", mode.map { .string($0.rawValue) }),
                ("mcpServers", mcpServers.isEmpty ? nil : .object(mcpServers.mapValues(\.json))),
                ("enableDeltas", enableDeltas.map(JSONValue.bool)), ("enableSteps", enableSteps.map(JSONValue.bool)),
                ("local", force.map { ["force": .bool($0)] }), ("cloud", envVars.map { ["envVars": stringMap($0) ?? [:]] }),
                ("idempotencyKey", idempotencyKey.map(JSONValue.string)),
                ("reclaimStaleRuns", reclaimStaleRuns.map(JSONValue.bool)),
            ], extra: extra)
    }
}

/// A message to an agent: text plus images.
public struct UserMessage: Sendable, Hashable, ExpressibleByStringLiteral {
    public enum Image: Sendable, Hashable {
        /// Base64-encoded bytes and their MIME type (`"image/png"`).
        case data(base64: String, mimeType: String)
        /// A remote image (cloud agents).
        case url(String)
    }

    public var text: String
    public var images: [Image]

    public init(_ text: String, images: [Image] = []) {
        self.text = text
        self.images = images
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// What `cursor_agent_send` takes: the text itself, or a `UserMessage` JSON object (also for
    /// text that starts like one, which the library would otherwise read as JSON).
    var wire: String {
        if images.isEmpty && !text.drop(while: \.isWhitespace).hasPrefix("{") { return text }
        let list = images.map { image -> JSONValue in
            switch image {
            case let .data(b64, mime): ["data": ["data": .string(b64), "mimeType": .string(mime)]]
            case let .url(url): ["url": ["url": .string(url)]]
            }
        }
        return JSONValue.object(["text": .string(text), "images": .array(list)]).jsonText
    }
}
