//! The blocking, thread-safe client: owns (or attaches to) one bridge and speaks `sdk.v1` to it.
//!
//! A managed bridge starts lazily on the first call (or at once with `eager`). What happens when
//! it dies is the link's policy (`link.rs`): the call that notices fails with `BridgeExited`
//! (carrying its stderr tail) and the next call starts a fresh one; agents live in the bridge's
//! memory, so they must then be resumed.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Deserialize;

use crate::agent::Agent;
use crate::bridge::shared::{self, SharedBridge};
use crate::bridge::{LaunchOptions, ManagedBridge};
use crate::callback::CallbackServer;
use crate::error::{Error, ErrorKind, Result};
use crate::link::{CallOpts, Connection, Link, Watch, AGENTS, CATALOG, CONTROL};
use crate::options;
use crate::proto;
use crate::tools::{Registry, Store, Tool, DEFAULT_TOOL_TIMEOUT};
use crate::transport::{FrameStream, Idempotency, Transport, TransportOptions};

/// How to reach a bridge. Every field is optional; JSON keys are camelCase (snake_case accepted).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientOptions {
    /// Bridge executable; otherwise `CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`.
    #[serde(alias = "bridge_path")]
    pub bridge_path: Option<PathBuf>,
    /// The bridge's workspace and the default `cwd` of local agents (default: current directory).
    pub workspace: Option<PathBuf>,
    /// Cursor API key (default: `CURSOR_API_KEY`). Sent explicitly on every call that needs one.
    #[serde(alias = "api_key")]
    pub api_key: Option<String>,
    /// Attach to an existing bridge instead of launching one (with `bridge_token`); such a
    /// bridge is never shut down by us. Default: `CURSOR_SDK_BRIDGE_URL`.
    #[serde(alias = "bridge_url")]
    pub bridge_url: Option<String>,
    /// Bearer token of the attached bridge. Default: `CURSOR_SDK_BRIDGE_TOKEN`.
    #[serde(alias = "bridge_token")]
    pub bridge_token: Option<String>,
    /// Time allowed for a launched bridge to print its ready line (default 30 000; 1 to 600 000).
    #[serde(alias = "startup_timeout_ms")]
    pub startup_timeout_ms: Option<u64>,
    /// Deadline of each call to the bridge, retries included, and of a stream's opening (default
    /// 60 000; 1 to 86 400 000).
    #[serde(alias = "request_timeout_ms")]
    pub request_timeout_ms: Option<u64>,
    /// A stream silent for this long (no event, no keepalive), or whose next frame is not whole
    /// within it (a peer trickling bytes), is dead (default 60 000; 1 to 86 400 000). The bridge
    /// sends a keepalive after 15 s of silence.
    #[serde(alias = "stream_idle_timeout_ms")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// Cap on one stream frame (default 64 MiB; 1 KiB to 1 GiB).
    #[serde(alias = "max_frame_bytes")]
    pub max_frame_bytes: Option<usize>,
    /// How often a read-only call is retried on unavailable, rate-limited or lost connections
    /// (default 0, as the official SDKs; at most 10).
    #[serde(alias = "max_retries")]
    pub max_retries: Option<u32>,
    /// Forward `--verbose` to the bridge (its per-RPC trace goes to the log sink).
    #[serde(default)]
    pub verbose: bool,
    /// Start the bridge when the client is created instead of on first use.
    #[serde(default)]
    pub eager: bool,
    /// Extra environment variables for a launched bridge.
    #[serde(default, alias = "bridge_env")]
    pub bridge_env: BTreeMap<String, String>,
    /// The local agent store of a launched bridge: `{"type":"sqlite"}` (the default),
    /// `{"type":"jsonl","rootDir":"…"}`, or `{"type":"custom"}` (needs a store handler:
    /// `Client::with_store` / `cursor_client_set_store`).
    #[serde(default, alias = "local_store")]
    pub local_store: Option<serde_json::Value>,
    /// How long a custom tool call may take before it is answered with an error (300 000; 1 to
    /// 86 400 000).
    #[serde(alias = "tool_timeout_ms")]
    pub tool_timeout_ms: Option<u64>,
    /// Extra command-line arguments for a launched bridge.
    #[serde(default, alias = "bridge_args")]
    pub bridge_args: Vec<String>,
    /// Use the shared warm bridge of this user and configuration, starting it if there is none;
    /// it outlives this client (see `bridge::shared`). Default: on when `CURSOR_SDK_SHARED_BRIDGE`
    /// is `1`, else off; `false` here wins over the variable. Refused with custom tools and
    /// store handlers, which need a bridge of their own.
    #[serde(alias = "shared_bridge")]
    pub shared_bridge: Option<bool>,
    /// How long a shared bridge started by this client lives on with no client (default 600 000;
    /// 1 to 86 400 000). A bridge that runs already keeps the idle period it was started with.
    #[serde(alias = "shared_bridge_idle_ms")]
    pub shared_bridge_idle_ms: Option<u64>,
}

impl ClientOptions {
    /// Parses options JSON; NULL or empty means all defaults. Unknown keys are errors.
    pub fn from_json(json: Option<&str>) -> Result<ClientOptions> {
        let text = json.map(str::trim).filter(|s| !s.is_empty()).unwrap_or("{}");
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_argument(format!("client options: malformed JSON: {e}")))?;
        if !value.is_object() {
            return Err(Error::invalid_argument("client options: expected a JSON object"));
        }
        let opts: ClientOptions = options::decode("client options", value)?;
        opts.validate()?;
        Ok(opts)
    }

    /// Refuses values that would break every later call, naming the key.
    pub fn validate(&self) -> Result<()> {
        const DAY_MS: u64 = 86_400_000;
        let range = |key: &str, v: Option<u64>, lo: u64, hi: u64| match v {
            Some(v) if v < lo || v > hi => Err(Error::invalid_argument(format!(
                "client options: {key}: must be between {lo} and {hi} (got {v})"
            ))),
            _ => Ok(()),
        };
        range("startupTimeoutMs", self.startup_timeout_ms, 1, 600_000)?;
        range("requestTimeoutMs", self.request_timeout_ms, 1, DAY_MS)?;
        range("streamIdleTimeoutMs", self.stream_idle_timeout_ms, 1, DAY_MS)?;
        range("toolTimeoutMs", self.tool_timeout_ms, 1, DAY_MS)?;
        range("maxFrameBytes", self.max_frame_bytes.map(|v| v as u64), 1024, 1 << 30)?;
        range("maxRetries", self.max_retries.map(u64::from), 0, 10)?;
        range("sharedBridgeIdleMs", self.shared_bridge_idle_ms, 1, DAY_MS)?;
        if let Some(url) = &self.bridge_url {
            crate::transport::http::check_base_url(url)
                .map_err(|e| Error::invalid_argument(format!("client options: bridgeUrl: {}", e.message)))?;
        }
        if let Some(token) = &self.bridge_token {
            crate::transport::http::check_token(token.trim())
                .map_err(|e| Error::invalid_argument(format!("client options: bridgeToken: {}", e.message)))?;
        }
        if let Some(w) = &self.workspace {
            if !w.is_dir() {
                return Err(Error::invalid_argument(format!(
                    "client options: workspace: {} is not a directory",
                    w.display()
                )));
            }
        }
        Ok(())
    }
}

/// Bridge build and protocol, from `GetVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeVersion {
    pub bridge_version: String,
    pub protocol_version: String,
    pub capabilities: Vec<String>,
    /// The cursor-sdk release the launched bridge ships in (its `manifest.json`); `None` for an
    /// attached bridge or one without a manifest. Every release says bridge version "1.0.0",
    /// so this is what tells them apart.
    pub sdk_version: Option<String>,
}

/// Where a bridge listens and the token it wants. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct BridgeEndpoint {
    pub url: String,
    pub token: String,
}

impl std::fmt::Debug for BridgeEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeEndpoint")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// One page of a listing, with the cursor of the next page (None on the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

struct Inner {
    opts: ClientOptions,
    workspace: PathBuf,
    attach: Option<(String, String)>,
    /// What turned the shared bridge on (the option or the variable), for error messages.
    shared: Option<&'static str>,
    /// The lease on the shared bridge in use: released (never stopped) at shutdown.
    shared_bridge: Mutex<Option<Arc<SharedBridge>>>,
    link: Arc<Link>,
    registry: Arc<Registry>,
    callbacks: Mutex<Option<Arc<CallbackServer>>>,
}

impl Inner {
    /// Stops the bridge, then the callback server (waiting for callbacks in progress). In a
    /// forked child nothing is stopped: the bridge and the threads belong to the parent.
    fn shutdown(&self) {
        self.link.shutdown();
        if self.link.is_foreign() {
            if let Some(mut slot) = self.callbacks.try_lock() {
                std::mem::forget(slot.take());
            }
            return;
        }
        // Closing our descriptor releases the lease (the parent's, after a fork, stays held).
        self.shared_bridge.lock().take();
        let server = self.callbacks.lock().take();
        if let Some(server) = server {
            server.stop();
        }
        // Every tool's and the store's user data is released by now, whatever agents live on.
        self.registry.close();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The client. Cheap to clone and share across threads; the bridge stops when the last clone
/// (and every agent and run made from it) is dropped, or on `shutdown()`.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// Creates a client. Nothing is launched until first use unless `opts.eager` is set.
    pub fn new(opts: ClientOptions) -> Result<Client> {
        Client::build(opts, None)
    }

    /// Creates a client whose bridge keeps agent state in `store` (launched with a custom
    /// local store; every agent-store operation is forwarded to it).
    pub fn with_store(opts: ClientOptions, store: Arc<dyn Store>) -> Result<Client> {
        Client::build(opts, Some(store))
    }

    fn build(opts: ClientOptions, store: Option<Arc<dyn Store>>) -> Result<Client> {
        opts.validate()?;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let url = opts.bridge_url.clone().or_else(|| env("CURSOR_SDK_BRIDGE_URL"));
        let token = opts
            .bridge_token
            .clone()
            .or_else(|| env("CURSOR_SDK_BRIDGE_TOKEN"))
            .or_else(|| env("CURSOR_SDK_BRIDGE_AUTH_TOKEN"));
        let attach = match (url, token) {
            (Some(u), Some(t)) => Some((u, t.trim().to_string())),
            (None, None) => None,
            (Some(_), None) => return Err(Error::invalid_argument("bridgeUrl is set but bridgeToken is not")),
            (None, Some(_)) => return Err(Error::invalid_argument("bridgeToken is set but bridgeUrl is not")),
        };
        let workspace = match &opts.workspace {
            Some(w) if w.is_absolute() => w.clone(),
            Some(w) => std::env::current_dir()
                .map_err(|e| Error::invalid_argument(format!("workspace: {e}")))?
                .join(w),
            None => std::env::current_dir().map_err(|e| Error::invalid_argument(format!("current directory: {e}")))?,
        };
        let tool_timeout = opts
            .tool_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TOOL_TIMEOUT);
        local_store_args(&opts, store.is_some(), attach.is_some())?;
        let shared = shared_source(&opts, attach.is_some(), store.is_some())?;
        let api_key = opts
            .api_key
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| env("CURSOR_API_KEY"));
        let link = Link::new(
            Duration::from_millis(opts.request_timeout_ms.unwrap_or(60_000)),
            opts.max_retries.unwrap_or(0),
            workspace.to_string_lossy().into_owned(),
            api_key,
        );
        let client = Client {
            inner: Arc::new(Inner {
                opts,
                workspace,
                attach,
                shared,
                shared_bridge: Mutex::new(None),
                link: Arc::new(link),
                registry: Arc::new(Registry::new(store, tool_timeout)),
                callbacks: Mutex::new(None),
            }),
        };
        if client.inner.opts.eager {
            client.connection()?;
        }
        Ok(client)
    }

    /// Creates a client from options JSON (see [`ClientOptions`]).
    pub fn from_json(json: Option<&str>) -> Result<Client> {
        Client::new(ClientOptions::from_json(json)?)
    }

    /// The workspace: the bridge's `--workspace` and the default `cwd` of local agents.
    pub fn workspace(&self) -> &std::path::Path {
        &self.inner.workspace
    }

    /// The API key the client sends by default, if any.
    pub fn api_key(&self) -> Option<&str> {
        self.inner.link.default_key()
    }

    /// The link every call goes through (shared with agents and runs).
    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.inner.link
    }

    /// Keeps the client (and so its bridge) alive for as long as a run needs it, without the
    /// run depending on the client type.
    pub(crate) fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        self.inner.clone()
    }

    /// True when the client attached to an external bridge rather than launching one.
    pub fn is_attached(&self) -> bool {
        self.inner.attach.is_some()
    }

    /// Starts the bridge now (a no-op when it runs already or when attached).
    pub fn start(&self) -> Result<()> {
        self.connection().map(|_| ())
    }

    /// The launched bridge's stderr tail (empty when attached or not started).
    pub fn bridge_stderr_tail(&self) -> String {
        let conn = self.inner.link.existing();
        conn.and_then(|c| c.bridge().map(ManagedBridge::stderr_tail))
            .unwrap_or_default()
    }

    /// True when the client uses the shared warm bridge (`sharedBridge`).
    pub fn is_shared(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// The base URL of the bridge in use (launched, shared or attached), once connected.
    pub fn bridge_url(&self) -> Option<String> {
        if let Some((url, _)) = &self.inner.attach {
            return Some(url.clone());
        }
        if let Some(sb) = self.inner.shared_bridge.lock().as_ref() {
            return Some(sb.base_url().to_string());
        }
        let conn = self.inner.link.existing();
        conn.and_then(|c| c.bridge().map(|b| b.base_url().to_string()))
    }

    /// URL and token of the bridge in use, so another client (or process) can attach to it.
    /// Treat the token as a secret: it grants full control of the bridge.
    pub fn bridge_endpoint(&self) -> Result<BridgeEndpoint> {
        if let Some((url, token)) = &self.inner.attach {
            return Ok(BridgeEndpoint {
                url: url.clone(),
                token: token.clone(),
            });
        }
        let conn = self.connection()?;
        if let Some(sb) = self.inner.shared_bridge.lock().as_ref() {
            return Ok(BridgeEndpoint {
                url: sb.base_url().to_string(),
                token: sb.token().to_string(),
            });
        }
        let bridge = conn.bridge().ok_or_else(|| Error::internal("no bridge"))?;
        Ok(BridgeEndpoint {
            url: bridge.base_url().to_string(),
            token: bridge.token().to_string(),
        })
    }

    /// A handle to an existing agent by id, without contacting the bridge. Management calls
    /// work through it at once; to send, load the agent into the bridge with `resume_agent`.
    pub fn agent_handle(&self, agent_id: &str, cwd: Option<&str>) -> Agent {
        Agent::new(
            self.clone(),
            agent_id.to_string(),
            cwd.map(str::to_string),
            String::new(),
            None,
        )
    }

    /// The launched (or shared) bridge's node pid, if one runs.
    pub fn bridge_pid(&self) -> Option<u32> {
        if let Some(sb) = self.inner.shared_bridge.lock().as_ref() {
            return Some(sb.pid());
        }
        let conn = self.inner.link.existing();
        conn.and_then(|c| c.bridge().map(|b| b.ready().pid))
    }

    /// Stops a launched bridge (`Shutdown` for up to 1 s, then signals; a few seconds at worst),
    /// then the callback server, and refuses later calls. Idempotent and safe from any thread.
    /// An attached bridge is left running.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// The live connection, launching the bridge if there is none (see `link.rs` for the
    /// policy after a death).
    pub(crate) fn connection(&self) -> Result<Arc<Connection>> {
        self.inner.link.connect(|| self.open())
    }

    fn open(&self) -> Result<Connection> {
        let o = &self.inner.opts;
        let topts = TransportOptions {
            unary_timeout: o
                .request_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(Duration::from_secs(60)),
            stream_idle_timeout: o
                .stream_idle_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(Duration::from_secs(60)),
            max_frame_bytes: o
                .max_frame_bytes
                .unwrap_or(crate::transport::frame::DEFAULT_MAX_FRAME_BYTES),
        };
        if let Some((url, token)) = &self.inner.attach {
            let conn = Connection::new(Transport::new(url, token, topts)?, None);
            self.register_tool_callback(&conn)?;
            return Ok(conn);
        }
        let mut args: Vec<OsString> = o.bridge_args.iter().map(OsString::from).collect();
        let mut env: Vec<(OsString, OsString)> = o
            .bridge_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        args.extend(local_store_args(o, self.inner.registry.has_store(), false)?);
        if self.inner.registry.has_store() {
            // The store endpoint can only be given at launch; the environment keeps the token out
            // of the process list (argv is world-readable, /proc/<pid>/environ is not).
            let server = self.callback_server()?;
            env.push(("CURSOR_SDK_STORE_CALLBACK_URL".into(), server.url().into()));
            env.push(("CURSOR_SDK_STORE_CALLBACK_AUTH_TOKEN".into(), server.token().into()));
        }
        let launch = LaunchOptions {
            bridge_path: o.bridge_path.clone(),
            workspace: Some(self.inner.workspace.clone()),
            api_key: self.inner.link.default_key().map(str::to_string),
            verbose: o.verbose,
            startup_timeout: Duration::from_millis(o.startup_timeout_ms.unwrap_or(30_000)),
            args,
            env,
            on_stderr_line: Some(Arc::new(|line: &str| crate::log::emit(crate::log::Level::Debug, line))),
            ..LaunchOptions::default()
        };
        if self.inner.shared.is_some() {
            let idle = o
                .shared_bridge_idle_ms
                .map(Duration::from_millis)
                .unwrap_or(shared::DEFAULT_IDLE);
            let (sb, transport) = SharedBridge::attach_or_launch(&launch, idle, topts)?;
            let sb = Arc::new(sb);
            // Weak: the lease goes with the client, not with a connection a run still holds.
            let watched = Arc::downgrade(&sb);
            *self.inner.shared_bridge.lock() = Some(sb);
            let watch: Watch = Box::new(move || {
                let sb = watched.upgrade()?;
                (!sb.is_alive()).then(|| {
                    Error::new(
                        ErrorKind::BridgeExited,
                        format!("the shared bridge (pid {}) exited or was stopped", sb.pid()),
                    )
                })
            });
            return Ok(Connection::watched(transport, watch));
        }
        let bridge = ManagedBridge::launch(&launch)?;
        let transport = Transport::new(bridge.base_url(), bridge.token(), topts)?;
        let conn = Connection::new(transport, Some(bridge));
        if let Err(e) = self.register_tool_callback(&conn) {
            // A bridge that died right after its ready line is reported as such.
            return Err(self.inner.link.explain(&Arc::new(conn), e));
        }
        Ok(conn)
    }

    /// The callback server, started on first need and stopped with the client.
    fn callback_server(&self) -> Result<Arc<CallbackServer>> {
        let mut slot = self.inner.callbacks.lock();
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let registry: Arc<dyn crate::callback::Dispatch> = self.inner.registry.clone();
        let server = Arc::new(CallbackServer::start(registry)?);
        *slot = Some(server.clone());
        Ok(server)
    }

    /// Points the bridge at our tool callbacks with `SetToolCallback` (so the token never sits
    /// on the bridge's command line), once any tool exists.
    fn register_tool_callback(&self, conn: &Connection) -> Result<()> {
        if !self.inner.registry.has_tools() {
            return Ok(());
        }
        self.set_tool_callback(conn)
    }

    fn set_tool_callback(&self, conn: &Connection) -> Result<()> {
        let server = self.callback_server()?;
        let req = proto::SetToolCallbackRequest {
            url: server.url().to_string(),
            auth_token: server.token().to_string(),
        };
        conn.transport
            .unary::<_, proto::SetToolCallbackResponse>(
                CONTROL,
                "SetToolCallback",
                &req,
                Idempotency::Idempotent,
                None,
                None,
            )
            .map(drop)
    }

    /// The callback server's URL, once tools or a store started it (never its token).
    pub fn tool_callback_url(&self) -> Option<String> {
        self.inner.callbacks.lock().as_ref().map(|s| s.url().to_string())
    }

    /// Registers a tool for every local agent this client creates or resumes from now on
    /// (replacing a tool of the same name).
    /// On error nothing is registered.
    pub fn add_tool(&self, tool: Tool) -> Result<()> {
        self.refuse_tools_if_shared()?;
        let name = tool.name.clone();
        self.inner.registry.add_client_tool(tool)?;
        let conn = self.inner.link.existing();
        let registered = match conn {
            Some(conn) => self.register_tool_callback(&conn),
            None => Ok(()),
        };
        if registered.is_err() {
            self.inner.registry.remove_client_tool(&name);
        }
        registered
    }

    /// The bridge has one tool callback for all its clients: a shared one would call another
    /// client's tools, or lose ours.
    fn refuse_tools_if_shared(&self) -> Result<()> {
        match self.inner.shared {
            Some(source) => Err(Error::invalid_argument(format!(
                "custom tools need a bridge of their own and cannot be used with the shared bridge ({source}): \
                 create this client with \"sharedBridge\": false"
            ))),
            None => Ok(()),
        }
    }

    /// Declares the client's tools plus `extra` in `local.custom_tools`, refusing what would
    /// silently lose them, and makes sure the bridge knows where to call.
    fn declare_tools(&self, opts: &mut proto::AgentOptions, extra: &[Tool]) -> Result<()> {
        let mut tools = self.inner.registry.client_tools();
        tools.extend(extra.iter().cloned());
        if tools.is_empty() {
            return Ok(());
        }
        self.refuse_tools_if_shared()?;
        if opts.cloud.is_some() {
            return Err(Error::invalid_argument(
                "custom tools work with local agents only; this agent has cloud options",
            ));
        }
        if opts.disallowed_tools.iter().any(|t| t.eq_ignore_ascii_case("mcp")) {
            return Err(Error::invalid_argument(
                "custom tools belong to the `mcp` tool group: disallowing `mcp` would remove them",
            ));
        }
        if let Some(list) = &opts.tools {
            if !list.names.iter().any(|t| t.eq_ignore_ascii_case("mcp")) {
                return Err(Error::invalid_argument(
                    "custom tools belong to the `mcp` tool group: add \"mcp\" to `tools` to keep them",
                ));
            }
        }
        let local = opts.local.get_or_insert_with(Default::default);
        for t in &tools {
            crate::tools::validate_name(&t.name)?;
            if !local.custom_tools.contains_key(&t.name) {
                local.custom_tools.insert(t.name.clone(), t.definition()?);
            }
        }
        let conn = self.connection()?;
        self.set_tool_callback(&conn)
    }

    pub(crate) fn unary<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        service: &str,
        method: &str,
        req: &Req,
        idempotency: Idempotency,
    ) -> Result<Resp> {
        let conn = self.connection()?;
        self.inner
            .link
            .unary(&conn, service, method, req, idempotency, CallOpts::default())
    }

    /// Opens a server stream (launching the bridge if needed).
    pub(crate) fn stream<Req: prost::Message>(&self, service: &str, method: &str, req: &Req) -> Result<FrameStream> {
        let conn = self.connection()?;
        self.inner.link.stream(&conn, service, method, req, CallOpts::default())
    }

    /// The key to send: the explicit one, else the client's; never empty.
    pub(crate) fn key(&self, explicit: &str) -> String {
        self.inner.link.key(explicit)
    }

    /// The `cwd` for management calls: the given one, else the workspace.
    pub(crate) fn cwd_or_workspace(&self, cwd: &str) -> String {
        self.inner.link.cwd_or_workspace(cwd)
    }

    fn catalog_key(&self, explicit: Option<&str>) -> Result<proto::CursorRequestOptions> {
        let key = self.key(explicit.unwrap_or(""));
        if key.is_empty() {
            return Err(Error::new(
                ErrorKind::Auth,
                "no Cursor API key: set CURSOR_API_KEY or pass apiKey (get one at https://cursor.com/dashboard → Integrations)",
            ));
        }
        Ok(proto::CursorRequestOptions { api_key: key })
    }

    // ---- control ----

    /// `Ping`: the bridge is up and accepts our token.
    pub fn ping(&self) -> Result<()> {
        let r: proto::PingResponse = self.unary(CONTROL, "Ping", &proto::PingRequest {}, Idempotency::Idempotent)?;
        if r.message != "pong" {
            return Err(Error::protocol(format!("Ping answered {:?}", r.message)));
        }
        Ok(())
    }

    /// `GetVersion`: bridge version, protocol, capabilities.
    pub fn version(&self) -> Result<BridgeVersion> {
        let conn = self.connection()?;
        let r: proto::GetVersionResponse = self.inner.link.unary(
            &conn,
            CONTROL,
            "GetVersion",
            &proto::GetVersionRequest {},
            Idempotency::Idempotent,
            CallOpts::default(),
        )?;
        Ok(BridgeVersion {
            bridge_version: r.bridge_version,
            protocol_version: r.protocol_version,
            capabilities: r.capabilities,
            sdk_version: self.sdk_version(&conn),
        })
    }

    /// Refuses options the running bridge release would drop silently (see `compat.rs`).
    fn check_supported(&self, opts: &proto::AgentOptions) -> Result<()> {
        let conn = self.connection()?;
        match self.sdk_version(&conn) {
            Some(v) => crate::compat::check_agent_options(&v, opts),
            None => Ok(()),
        }
    }

    /// The cursor-sdk release of the bridge behind `conn` (launched or shared), if known.
    fn sdk_version(&self, conn: &Connection) -> Option<String> {
        if let Some(sb) = self.inner.shared_bridge.lock().as_ref() {
            return sb.sdk_version().map(str::to_string);
        }
        conn.bridge().and_then(|b| b.sdk_version()).map(str::to_string)
    }

    // ---- catalog ----

    /// The account of the API key (explicit, else the client's).
    pub fn me(&self, api_key: Option<&str>) -> Result<proto::SdkUser> {
        let req = proto::MeRequest {
            options: Some(self.catalog_key(api_key)?),
        };
        let r: proto::MeResponse = self.unary(CATALOG, "Me", &req, Idempotency::Idempotent)?;
        r.user.ok_or_else(|| Error::protocol("Me returned no user"))
    }

    /// Models the account may use.
    pub fn models(&self, api_key: Option<&str>) -> Result<Vec<proto::SdkModel>> {
        let req = proto::ListModelsRequest {
            options: Some(self.catalog_key(api_key)?),
        };
        let r: proto::ListModelsResponse = self.unary(CATALOG, "ListModels", &req, Idempotency::Idempotent)?;
        Ok(r.items)
    }

    /// Repositories the account can use with cloud agents.
    pub fn repositories(&self, api_key: Option<&str>) -> Result<Vec<proto::SdkRepository>> {
        let req = proto::ListRepositoriesRequest {
            options: Some(self.catalog_key(api_key)?),
        };
        let r: proto::ListRepositoriesResponse =
            self.unary(CATALOG, "ListRepositories", &req, Idempotency::Idempotent)?;
        Ok(r.items)
    }

    // ---- agents ----

    /// Creates an agent. Local agents without a `cwd` get the workspace; the API key is filled in.
    pub fn create_agent(&self, opts: proto::AgentOptions) -> Result<Agent> {
        self.create_agent_with_tools(opts, Vec::new())
    }

    /// Creates a local agent with tools of its own (besides the client's), declared in its
    /// `local.custom_tools`. They stay registered until the agent is closed or the client goes.
    pub fn create_agent_with_tools(&self, opts: proto::AgentOptions, tools: Vec<Tool>) -> Result<Agent> {
        self.create_agent_full(opts, tools, None)
    }

    /// Creates an agent with an idempotency key, which makes retrying a cloud create safe (the
    /// bridge refuses keys for local agents). Cloud creates without a key get a fresh one, so
    /// the library's own retry on a stale connection can never create two agents.
    pub fn create_agent_full(
        &self,
        mut opts: proto::AgentOptions,
        tools: Vec<Tool>,
        idempotency_key: Option<String>,
    ) -> Result<Agent> {
        self.prepare_agent_options(&mut opts);
        self.declare_tools(&mut opts, &tools)?;
        self.check_supported(&opts)?;
        let cwd = opts.local.as_ref().and_then(|l| l.cwd.first().cloned());
        let cloud = opts.cloud.is_some();
        let idempotency_key = match idempotency_key {
            Some(k) => Some(k),
            None if cloud => Some(crate::callback::random_id()?),
            None => None,
        };
        let idempotency = if idempotency_key.is_some() {
            Idempotency::Idempotent
        } else {
            Idempotency::NotIdempotent
        };
        let req = proto::CreateAgentRequest {
            options: Some(opts.clone()),
            idempotency_key,
        };
        let r: proto::CreateAgentResponse = self.unary(AGENTS, "CreateAgent", &req, idempotency)?;
        if !tools.is_empty() {
            self.inner.registry.add_agent_tools(&r.agent_id, tools);
        }
        Ok(Agent::new(
            self.clone(),
            r.agent_id,
            cwd,
            opts.api_key,
            r.model.or(opts.model),
        ))
    }

    /// Creates an agent from options JSON (proto3 JSON plus shorthands, see [`crate::options`]).
    /// An `idempotencyKey` member is taken as the request's key.
    pub fn create_agent_json(&self, json: Option<&str>) -> Result<Agent> {
        let (opts, extras) = options::agent_request_options(json)?;
        self.create_agent_full(opts, Vec::new(), extras.idempotency_key)
    }

    /// Re-attaches to an existing agent, applying `opts` (model, key, tools…).
    pub fn resume_agent(&self, agent_id: &str, opts: proto::AgentOptions) -> Result<Agent> {
        self.resume_agent_with_tools(agent_id, opts, Vec::new())
    }

    /// Resumes an agent with tools of its own. The bridge does not persist tool definitions,
    /// so an agent made with tools needs them again here after a bridge restart.
    pub fn resume_agent_with_tools(
        &self,
        agent_id: &str,
        mut opts: proto::AgentOptions,
        tools: Vec<Tool>,
    ) -> Result<Agent> {
        if agent_id.is_empty() {
            return Err(Error::invalid_argument("agent id is empty"));
        }
        self.prepare_agent_options(&mut opts);
        self.declare_tools(&mut opts, &tools)?;
        self.check_supported(&opts)?;
        let cwd = opts.local.as_ref().and_then(|l| l.cwd.first().cloned());
        let req = proto::ResumeAgentRequest {
            agent_id: agent_id.to_string(),
            options: Some(opts.clone()),
        };
        let r: proto::ResumeAgentResponse = self.unary(AGENTS, "ResumeAgent", &req, Idempotency::NotIdempotent)?;
        let id = if r.agent_id.is_empty() {
            agent_id.to_string()
        } else {
            r.agent_id
        };
        if !tools.is_empty() {
            self.inner.registry.add_agent_tools(&id, tools);
        }
        Ok(Agent::new(self.clone(), id, cwd, opts.api_key, r.model.or(opts.model)))
    }

    fn prepare_agent_options(&self, opts: &mut proto::AgentOptions) {
        opts.api_key = self.key(&opts.api_key);
        if opts.cloud.is_none() {
            let local = opts.local.get_or_insert_with(Default::default);
            if local.cwd.is_empty() {
                local.cwd.push(self.inner.workspace.to_string_lossy().into_owned());
            }
        }
    }

    /// Metadata of one agent. `cwd` empty means the workspace.
    pub fn get_agent(&self, agent_id: &str, mut opts: proto::AgentOperationOptions) -> Result<proto::SdkAgentInfo> {
        opts.cwd = self.cwd_or_workspace(&opts.cwd);
        opts.api_key = self.key(&opts.api_key);
        let req = proto::GetAgentRequest {
            agent_id: agent_id.to_string(),
            options: Some(opts),
        };
        let r: proto::GetAgentResponse = self.unary(AGENTS, "GetAgent", &req, Idempotency::Idempotent)?;
        r.agent.ok_or_else(|| Error::protocol("GetAgent returned no agent"))
    }

    /// One page of agents. Pass the previous page's `next_cursor` in `opts.cursor` for the next.
    pub fn list_agents(&self, mut opts: proto::ListAgentsOptions) -> Result<Page<proto::SdkAgentInfo>> {
        if opts.runtime != proto::Runtime::Cloud as i32 {
            opts.cwd = self.cwd_or_workspace(&opts.cwd);
        }
        opts.api_key = self.key(&opts.api_key);
        let req = proto::ListAgentsRequest { options: Some(opts) };
        let r: proto::ListAgentsResponse = self.unary(AGENTS, "ListAgents", &req, Idempotency::Idempotent)?;
        Ok(Page {
            items: r.items,
            next_cursor: Some(r.next_cursor).filter(|c| !c.is_empty()),
        })
    }

    /// Every agent, page by page (`opts.limit` is the page size).
    pub fn agents(&self, opts: proto::ListAgentsOptions) -> Pages<proto::SdkAgentInfo> {
        let client = self.clone();
        Pages::new(Box::new(move |cursor: Option<String>| {
            let mut o = opts.clone();
            o.cursor = cursor.unwrap_or_default();
            client.list_agents(o)
        }))
    }

    /// Archives an agent (hidden from default listings).
    pub fn archive_agent(&self, agent_id: &str, opts: proto::AgentOperationOptions) -> Result<()> {
        let req = proto::ArchiveAgentRequest {
            agent_id: agent_id.to_string(),
            options: Some(self.op_opts(opts)),
        };
        self.unary::<_, proto::ArchiveAgentResponse>(AGENTS, "ArchiveAgent", &req, Idempotency::NotIdempotent)
            .map(drop)
    }

    /// Restores an archived agent.
    pub fn unarchive_agent(&self, agent_id: &str, opts: proto::AgentOperationOptions) -> Result<()> {
        let req = proto::UnarchiveAgentRequest {
            agent_id: agent_id.to_string(),
            options: Some(self.op_opts(opts)),
        };
        self.unary::<_, proto::UnarchiveAgentResponse>(AGENTS, "UnarchiveAgent", &req, Idempotency::NotIdempotent)
            .map(drop)
    }

    /// Deletes an agent and its durable data. Fails with `FailedPrecondition` while a run of
    /// the agent is live; cancel it first.
    ///
    /// The bridge pre-creates a `queued` run with every agent and refuses to delete an agent
    /// whose queued run never started. Such a run (one this client is not streaming) is
    /// cancelled and the delete retried once. (Never done for runs this client streams:
    /// `GetRun` on a live run would detach it.)
    pub fn delete_agent(&self, agent_id: &str, opts: proto::AgentOperationOptions) -> Result<()> {
        let req = proto::DeleteAgentRequest {
            agent_id: agent_id.to_string(),
            options: Some(self.op_opts(opts)),
        };
        let delete =
            || self.unary::<_, proto::DeleteAgentResponse>(AGENTS, "DeleteAgent", &req, Idempotency::NotIdempotent);
        match delete() {
            Err(e) if e.kind == ErrorKind::FailedPrecondition || is_bare_internal(&e) => {
                let cwd = req.options.as_ref().map(|o| o.cwd.clone()).unwrap_or_default();
                // 1.1.0 names the blocking run; bridges before 1.0.27 say only "internal error",
                // so the store is asked for a run no bridge of this client runs.
                let run_id = match blocking_run(&e.message) {
                    Some(r) if !self.inner.link.is_live_run(r) => r.to_string(),
                    Some(_) => return Err(e),
                    None => match self.stale_run(agent_id, &cwd)? {
                        Some(r) => r,
                        None => return Err(e),
                    },
                };
                self.cancel_run(agent_id, &run_id, Some(&cwd))?;
                delete().map(drop)
            }
            other => other.map(drop),
        }
    }

    /// Cancels a run by id. The agent id lets the bridge find a run that it does not hold in
    /// memory (one another bridge process started, or one a dead bridge left `running`): such a
    /// run is looked up in the store (`GetRun`, under `cwd`, default the workspace) and cancelled
    /// there. Cancelling a run that is over does nothing. Blocks for up to three RPCs.
    pub fn cancel_run(&self, agent_id: &str, run_id: &str, cwd: Option<&str>) -> Result<()> {
        if agent_id.is_empty() || run_id.is_empty() {
            return Err(Error::invalid_argument("agent id and run id must not be empty"));
        }
        let cancel = || {
            let req = proto::CancelRunRequest {
                run_id: run_id.to_string(),
                agent_id: Some(agent_id.to_string()),
            };
            self.unary::<_, proto::CancelRunResponse>(AGENTS, "CancelRun", &req, Idempotency::Idempotent)
                .map(drop)
        };
        match cancel() {
            Err(e) if matches!(e.kind, ErrorKind::NotFound | ErrorKind::InvalidArgument) => {
                if self.inner.link.is_live_run(run_id) {
                    return Err(e);
                }
                // The bridge cancels only runs in its registry; GetRun registers a stored one
                // (harmless here: a run this client does not stream is not live in this bridge).
                let get = proto::GetRunOptions {
                    cwd: self.cwd_or_workspace(cwd.unwrap_or("")),
                    agent_id: agent_id.to_string(),
                    ..Default::default()
                };
                self.get_run(run_id, get)?;
                cancel()
            }
            other => other,
        }
    }

    /// The run that keeps `agent_id` busy although this client does not stream it, if the store
    /// names one: a run created by another bridge process (e.g. the `queued` run every create
    /// makes) or left `running` by a bridge that died.
    pub(crate) fn stale_run(&self, agent_id: &str, cwd: &str) -> Result<Option<String>> {
        if self.inner.link.streams_agent(agent_id) {
            return Ok(None);
        }
        let opts = proto::ListRunsOptions {
            limit: 10,
            cwd: cwd.to_string(),
            ..Default::default()
        };
        let page = self.list_runs(agent_id, opts)?;
        Ok(page
            .items
            .into_iter()
            .find(|r| {
                matches!(
                    proto::RunLifecycleStatus::try_from(r.status),
                    Ok(proto::RunLifecycleStatus::Running
                        | proto::RunLifecycleStatus::Creating
                        | proto::RunLifecycleStatus::Unspecified)
                ) && !self.inner.link.is_live_run(&r.run_id)
            })
            .map(|r| r.run_id))
    }

    /// Forgets an agent's own tools (its handlers are dropped once no call runs).
    pub(crate) fn forget_agent_tools(&self, agent_id: &str) {
        self.inner.registry.remove_agent_tools(agent_id);
    }

    pub(crate) fn op_opts(&self, mut opts: proto::AgentOperationOptions) -> proto::AgentOperationOptions {
        opts.cwd = self.cwd_or_workspace(&opts.cwd);
        opts.api_key = self.key(&opts.api_key);
        opts
    }

    /// One-shot: create an agent, send `text`, wait, close the agent; returns the result.
    pub fn prompt(&self, text: &str, opts: proto::AgentOptions) -> Result<crate::run::RunResult> {
        let agent = self.create_agent(opts)?;
        let outcome = agent.send_text(text).and_then(|run| run.wait());
        let _ = agent.close();
        outcome
    }

    // ---- runs ----

    /// One page of an agent's runs. Beware: listing a *live* run detaches the bridge's live
    /// handle (bridge-behavior §3.4), so do not list while you stream a run of that agent.
    pub fn list_runs(&self, agent_id: &str, mut opts: proto::ListRunsOptions) -> Result<Page<proto::RunSnapshot>> {
        if opts.runtime != proto::Runtime::Cloud as i32 {
            opts.cwd = self.cwd_or_workspace(&opts.cwd);
        }
        opts.api_key = self.key(&opts.api_key);
        let req = proto::ListRunsRequest {
            agent_id: agent_id.to_string(),
            options: Some(opts),
        };
        let r: proto::ListRunsResponse = self.unary(AGENTS, "ListRuns", &req, Idempotency::Idempotent)?;
        Ok(Page {
            items: r.items,
            next_cursor: Some(r.next_cursor).filter(|c| !c.is_empty()),
        })
    }

    /// A run's snapshot. The same caveat as [`Client::list_runs`] applies to live runs.
    pub fn get_run(&self, run_id: &str, mut opts: proto::GetRunOptions) -> Result<proto::RunSnapshot> {
        if opts.runtime != proto::Runtime::Cloud as i32 {
            opts.cwd = self.cwd_or_workspace(&opts.cwd);
        }
        opts.api_key = self.key(&opts.api_key);
        let req = proto::GetRunRequest {
            run_id: run_id.to_string(),
            options: Some(opts),
        };
        let r: proto::GetRunResponse = self.unary(AGENTS, "GetRun", &req, Idempotency::Idempotent)?;
        r.run.ok_or_else(|| Error::protocol("GetRun returned no run"))
    }

    /// The conversation of a run, as the JSON document the bridge keeps.
    pub fn run_conversation(&self, run_id: &str) -> Result<String> {
        let req = proto::GetRunConversationRequest {
            run_id: run_id.to_string(),
        };
        let r: proto::GetRunConversationResponse =
            self.unary(AGENTS, "GetRunConversation", &req, Idempotency::Idempotent)?;
        Ok(r.conversation_json)
    }
}

/// What turns the shared bridge on, if anything: the option, else the variable. Refuses what
/// cannot share (a store handler; an explicit `bridgeUrl`, which the variable yields to).
fn shared_source(o: &ClientOptions, attached: bool, has_store: bool) -> Result<Option<&'static str>> {
    let source = match o.shared_bridge {
        Some(true) => "sharedBridge",
        Some(false) => return Ok(None),
        None => match std::env::var(shared::ENV_SHARED_BRIDGE).as_deref() {
            Ok("1" | "true") if !attached => "CURSOR_SDK_SHARED_BRIDGE=1",
            _ => return Ok(None),
        },
    };
    if attached {
        return Err(Error::invalid_argument(
            "sharedBridge and bridgeUrl/bridgeToken exclude each other: attach to a bridge, or share one",
        ));
    }
    if has_store {
        return Err(Error::invalid_argument(format!(
            "a store handler needs a bridge of its own and cannot be used with the shared bridge ({source}): \
             create this client with \"sharedBridge\": false"
        )));
    }
    Ok(Some(source))
}

/// The `--local-store` arguments for `localStore` (and a custom store handler).
fn local_store_args(o: &ClientOptions, has_store: bool, attached: bool) -> Result<Vec<OsString>> {
    let config = match (&o.local_store, has_store) {
        (None, false) => return Ok(Vec::new()),
        (None, true) => serde_json::json!({"type": "custom"}),
        (Some(v), _) => v.clone(),
    };
    if !config.is_object() {
        return Err(Error::invalid_argument(
            r#"localStore must be an object like {"type":"sqlite"}"#,
        ));
    }
    let config: proto::LocalAgentStoreConfig = crate::options::decode("localStore", config)?;
    match (config.r#type.as_str(), has_store) {
        ("custom", true) => {}
        ("custom", false) => {
            return Err(Error::invalid_argument(
                r#"localStore type "custom" needs a store handler"#,
            ))
        }
        (other, true) => {
            return Err(Error::invalid_argument(format!(
                r#"a store handler needs localStore type "custom" (got {other:?})"#
            )))
        }
        ("jsonl", false) if config.root_dir.is_empty() => {
            return Err(Error::invalid_argument(r#"localStore type "jsonl" needs rootDir"#))
        }
        ("sqlite" | "jsonl" | "", false) => {}
        (other, false) => return Err(Error::invalid_argument(format!("localStore type {other:?} is unknown"))),
    }
    if attached {
        return Err(Error::invalid_argument(
            "localStore and store handlers configure a bridge at launch; an attached bridge keeps its own",
        ));
    }
    let json = serde_json::to_string(&config).map_err(|e| Error::internal(e.to_string()))?;
    Ok(vec!["--local-store".into(), json.into()])
}

/// The bare `internal` error (no message, no details) that bridges before cursor-sdk 1.0.27
/// send for every failure that is not an SDK error, "already has active run" included.
pub(crate) fn is_bare_internal(e: &Error) -> bool {
    e.kind == ErrorKind::Internal && e.connect_code.as_deref() == Some("internal") && e.message == "internal error"
}

/// The run named by the bridge's "active run <id> is not terminal" refusal.
fn blocking_run(message: &str) -> Option<&str> {
    let rest = &message[message.find("active run ")? + "active run ".len()..];
    let id = rest.split_whitespace().next()?;
    rest[id.len()..]
        .trim_start()
        .starts_with("is not terminal")
        .then_some(id)
}

type PageFn<T> = Box<dyn FnMut(Option<String>) -> Result<Page<T>> + Send>;

/// Iterates items across pages, fetching the next page when the current one is used up.
pub struct Pages<T> {
    fetch: PageFn<T>,
    buffer: std::vec::IntoIter<T>,
    cursor: Option<String>,
    done: bool,
}

impl<T> Pages<T> {
    fn new(fetch: PageFn<T>) -> Self {
        Pages {
            fetch,
            buffer: Vec::new().into_iter(),
            cursor: None,
            done: false,
        }
    }
}

impl<T> Iterator for Pages<T> {
    type Item = Result<T>;
    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(item) = self.buffer.next() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match (self.fetch)(self.cursor.take()) {
                Ok(page) => {
                    self.done = page.next_cursor.is_none();
                    self.cursor = page.next_cursor;
                    self.buffer = page.items.into_iter();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::blocking_run;

    #[test]
    fn blocking_run_is_parsed_from_the_refusal() {
        let m = "Cannot delete agent agent-1: active run run-2 is not terminal. Call run.cancel() first.";
        assert_eq!(blocking_run(m), Some("run-2"));
        assert_eq!(blocking_run("Agent agent-1 not found"), None);
        assert_eq!(blocking_run("active run run-2 is fine"), None);
    }
}
