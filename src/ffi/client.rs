//! `cursor_client`: the bridge connection, catalog, and management calls by id.

use std::ffi::c_char;

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use serde_json::json;

use super::error::cursor_error;
use super::{arg_str, call, cursor_status, handle, json, opt_str, out_ptr, quiet, take_handle, write_string};
use crate::client::{Client, Page};
use crate::error::Result;
use crate::options;

/// A client: owns (or attaches to) one bridge. Thread-safe: every function taking a
/// `cursor_client *` may be called from many threads at once.
pub struct cursor_client {
    pub(crate) client: Client,
    /// Calls of queued tools waiting for `cursor_client_next_tool_call`.
    pub(crate) tool_queue: std::sync::Arc<super::tools::ToolQueue>,
}

impl cursor_client {
    pub(crate) fn new(client: Client) -> cursor_client {
        cursor_client {
            client,
            tool_queue: Default::default(),
        }
    }
}

/// Creates a client. `options_json` may be NULL (or `"{}"`): the bridge is found automatically
/// (`CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`), the workspace is the current
/// directory and the API key comes from `CURSOR_API_KEY`. Keys (camelCase or snake_case):
/// `bridgePath`, `workspace`, `apiKey`, `bridgeUrl` + `bridgeToken` (attach to a running bridge,
/// which is then never stopped by us; also `CURSOR_SDK_BRIDGE_URL`/`CURSOR_SDK_BRIDGE_TOKEN`),
/// `startupTimeoutMs` (30000; 1..600000), `requestTimeoutMs` (60000; 1..86400000: the bound of
/// every call to the bridge, retries included), `streamIdleTimeoutMs` (60000; 1..86400000:
/// each stream frame, event or keepalive, must arrive whole within it),
/// `maxFrameBytes` (64 MiB; 1 KiB..1 GiB), `maxRetries` (0..10, default 0: how often read-only
/// calls are retried on unavailable, rate-limited or lost connections, with backoff and jitter,
/// honouring the bridge's retry-after), `toolTimeoutMs`, `verbose`, `eager` (start the bridge
/// now instead of on first use), `localStore`, `bridgeEnv` (object), `bridgeArgs` (array),
/// `sharedBridge` (use this user's shared warm bridge for the configuration, starting it if there
/// is none; it outlives the client and exits after `sharedBridgeIdleMs`, 600000; 1..86400000,
/// without a client; default: on when `CURSOR_SDK_SHARED_BRIDGE=1`, `false` wins over it; with
/// custom tools, a store handler or `bridgeUrl` it is `CURSOR_E_INVALID_ARGUMENT`).
/// Unknown keys, values out of range, a malformed `bridgeUrl` (not `http://host:port`) and a
/// `workspace` that is not a directory are `CURSOR_E_INVALID_ARGUMENT`, naming the key.
///
/// On success `*out` owns a client to free with `cursor_client_free`. Without `eager` this does
/// not block; with it, it waits for the bridge (up to `startupTimeoutMs`). The client belongs to
/// the calling process: after `fork()`, every call on it in the child fails at once with
/// `CURSOR_E_USAGE` (create a new client there).
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated; `out` must be a valid pointer; `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_new(
    options_json: *const c_char,
    out: *mut *mut cursor_client,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let client = Client::from_json(opt_str(options_json, "options_json")?)?;
        *out = super::into_handle(cursor_client::new(client));
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Frees a client and stops the bridge it launched: the `Shutdown` RPC (at most 1 s), then
/// signals (a few seconds at worst for a bridge that ignores them; usually well under 100 ms).
/// An attached bridge is left running. Then the callback server stops: by the time this returns
/// no tool or store callback is running and every `user_data_free` has run, whatever agent and
/// run handles are still alive. Calls on those handles fail with `CURSOR_E_USAGE` afterwards
/// (they must still be freed). NULL is accepted. Must not be called while another thread still
/// uses this client. In a forked child it releases the handle only: the bridge, its threads and
/// the callbacks belong to the parent and are left alone.
///
/// # Safety
/// `c` must be NULL or a client from `cursor_client_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_free(c: *mut cursor_client) {
    quiet((), || {
        if let Some(c) = take_handle(c) {
            c.client.shutdown();
        }
    });
}

/// Starts the bridge now (a no-op when it runs already or the client is attached). Blocks up to
/// `startupTimeoutMs`; with custom tools, plus their registration (`requestTimeoutMs`) and, when
/// that fails, the stop of the bridge that failed (about 1 s). After the bridge died, the next call
/// (this one, or any client or agent call) starts a new one.
///
/// # Safety
/// `c`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_client_start(c: *mut cursor_client, err: *mut *mut cursor_error) -> cursor_status {
    call(err, || {
        handle(c, "client")?.client.start()?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Checks that the bridge is up and accepts our token (`Ping`). Starts the bridge if needed. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `c`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_client_ping(c: *mut cursor_client, err: *mut *mut cursor_error) -> cursor_status {
    call(err, || {
        handle(c, "client")?.client.ping()?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The bridge's version as JSON: `{"bridgeVersion","protocolVersion","capabilities":[…],
/// "sdkVersion"}`, where `sdkVersion` is the cursor-sdk release a launched bridge ships in
/// (from its `manifest.json`; null when attached or unknown): every release reports bridge
/// version "1.0.0", so this is what tells them apart.
/// On success `*json_out` is an owned string for `cursor_string_free`. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `c`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_client_version(
    c: *mut cursor_client,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(json_out, "json_out")?;
        let v = handle(c, "client")?.client.version()?;
        let text = json!({"bridgeVersion": v.bridge_version, "protocolVersion": v.protocol_version,
                          "capabilities": v.capabilities, "sdkVersion": v.sdk_version});
        write_string(json_out, text.to_string());
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Stops a launched bridge now (bounded as in `cursor_client_free`); later calls on this client
/// fail with `CURSOR_E_USAGE`. Idempotent and safe from any thread (e.g. from a signal-handling
/// thread, not a signal handler).
///
/// # Safety
/// `c`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_client_shutdown(c: *mut cursor_client) {
    quiet((), || {
        if let Ok(c) = handle(c, "client") {
            c.client.shutdown();
        }
    })
}

/// Runs `f` with the client and writes its JSON result to `json_out`.
fn json_call(
    c: *mut cursor_client,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
    f: impl FnOnce(&Client) -> Result<String>,
) -> cursor_status {
    call(err, || {
        out_ptr(json_out, "json_out")?;
        let text = f(&handle(c, "client")?.client)?;
        write_string(json_out, text);
        Ok(cursor_status::CURSOR_OK)
    })
}

fn page_json<T: serde::Serialize>(page: Page<T>) -> Result<String> {
    let items: Vec<serde_json::Value> = page
        .items
        .iter()
        .map(|i| serde_json::to_value(i).unwrap_or(serde_json::Value::Null))
        .collect();
    json(&json!({"items": items, "nextCursor": page.next_cursor}))
}

/// The account of the API key (`api_key`, or the client's when NULL) as JSON (`SdkUser`).
/// Needs the Cursor backend. Owned result for `cursor_string_free`.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_me(
    c: *mut cursor_client,
    api_key: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| json(&cl.me(opt_str(api_key, "api_key")?)?))
}

/// The models the account may use, as a JSON array of `SdkModel`. Owned result.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_models(
    c: *mut cursor_client,
    api_key: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| json(&cl.models(opt_str(api_key, "api_key")?)?))
}

/// The repositories the account can use with cloud agents, as a JSON array. Owned result.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_repositories(
    c: *mut cursor_client,
    api_key: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| {
        json(&cl.repositories(opt_str(api_key, "api_key")?)?)
    })
}

/// One agent's metadata (`SdkAgentInfo` JSON). `options_json` (may be NULL): `{"cwd","apiKey"}`;
/// the cwd defaults to the client's workspace. Owned result.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_get_agent(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| {
        let opts = options::agent_operation_options(opt_str(options_json, "options_json")?)?;
        json(&cl.get_agent(arg_str(agent_id, "agent_id")?, opts)?)
    })
}

/// One page of agents: `{"items":[SdkAgentInfo…],"nextCursor":"…"|null}`. `options_json` (may be
/// NULL): `limit`, `cursor` (a previous `nextCursor`), `runtime` (`"local"`/`"cloud"`), `cwd`,
/// `prUrl`, `includeArchived`, `apiKey`. Owned result.
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_list_agents(
    c: *mut cursor_client,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| {
        page_json(cl.list_agents(options::list_agents_options(opt_str(options_json, "options_json")?)?)?)
    })
}

/// Runs `f(client, agent_id, options)` for the by-id management calls.
unsafe fn by_id(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    err: *mut *mut cursor_error,
    f: impl FnOnce(&Client, &str, crate::proto::AgentOperationOptions) -> Result<()>,
) -> cursor_status {
    call(err, || {
        let opts = options::agent_operation_options(opt_str(options_json, "options_json")?)?;
        f(&handle(c, "client")?.client, arg_str(agent_id, "agent_id")?, opts)?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Archives an agent by id. `options_json` as for `cursor_client_get_agent`.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_archive_agent(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    by_id(c, agent_id, options_json, err, |cl, id, o| cl.archive_agent(id, o))
}

/// Restores an archived agent by id.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_unarchive_agent(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    by_id(c, agent_id, options_json, err, |cl, id, o| cl.unarchive_agent(id, o))
}

/// Deletes an agent and its durable data by id (`CURSOR_E_FAILED_PRECONDITION` while a run of
/// it is live: cancel the run first).
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_delete_agent(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    by_id(c, agent_id, options_json, err, |cl, id, o| cl.delete_agent(id, o))
}

/// One page of an agent's runs: `{"items":[RunSnapshot…],"nextCursor":…}`. `options_json`:
/// `limit`, `cursor`, `runtime`, `cwd`, `apiKey`. Listing a run that is streaming right now
/// detaches the bridge's live handle: do not list while you stream a run of this agent.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_list_runs(
    c: *mut cursor_client,
    agent_id: *const c_char,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| {
        let opts = options::list_runs_options(opt_str(options_json, "options_json")?)?;
        page_json(cl.list_runs(arg_str(agent_id, "agent_id")?, opts)?)
    })
}

/// A run's snapshot (`RunSnapshot` JSON). `options_json`: `runtime`, `cwd`, `agentId`, `apiKey`.
/// The same live-run caveat as `cursor_client_list_runs` applies.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_get_run(
    c: *mut cursor_client,
    run_id: *const c_char,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| {
        let opts = options::get_run_options(opt_str(options_json, "options_json")?)?;
        json(&cl.get_run(arg_str(run_id, "run_id")?, opts)?)
    })
}

/// Cancels a run by id: for runs this process has no handle of, and for stale runs that hold an
/// agent (`CURSOR_E_STALE_RUN`: made by another bridge process, or left running by one that
/// died). `options_json` (may be NULL): `{"cwd"}` where the agent's store lives (default: the
/// client's workspace). A run that is over is left as it is. Blocks for up to three RPCs, each
/// bounded by `requestTimeoutMs`.
///
/// # Safety
/// `agent_id` and `run_id` must be NUL-terminated; `options_json` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_cancel_run(
    c: *mut cursor_client,
    agent_id: *const c_char,
    run_id: *const c_char,
    options_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let opts = options::agent_operation_options(opt_str(options_json, "options_json")?)?;
        let cwd = Some(opts.cwd.as_str()).filter(|c| !c.is_empty());
        handle(c, "client")?
            .client
            .cancel_run(arg_str(agent_id, "agent_id")?, arg_str(run_id, "run_id")?, cwd)?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// A run's conversation document (JSON text, as the bridge keeps it). Owned result.
///
/// # Safety
/// `run_id` must be NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_run_conversation(
    c: *mut cursor_client,
    run_id: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    json_call(c, json_out, err, |cl| cl.run_conversation(arg_str(run_id, "run_id")?))
}

/// The process-wide client behind `cursor_prompt`, made on first use with default options, and
/// the process it belongs to (checked before the lock, which a forked child must not take).
static DEFAULT_CLIENT: Lazy<Mutex<Option<Client>>> = Lazy::new(|| Mutex::new(None));
static DEFAULT_OWNER: once_cell::sync::OnceCell<crate::fork::Owner> = once_cell::sync::OnceCell::new();

/// One-shot: with a process-wide default client (default options, started on first use and
/// stopped at exit), creates an agent from `agent_options_json` (NULL allowed, e.g.
/// `{"model":"composer-2"}`), sends `prompt`, waits for the end and closes the agent. On success
/// `*text_out` owns the final assistant text. A run that ended with status error or expired gives
/// `CURSOR_E_RUN_FAILED`, a cancelled one `CURSOR_E_CANCELLED`, each with the run's reason as
/// the message. Blocks for the whole run (bounded as for `cursor_run_wait`); thread-safe. In a
/// forked child of a process that used it, fails at once with `CURSOR_E_USAGE`.
///
/// # Safety
/// `prompt` must be NUL-terminated, `agent_options_json` NULL or NUL-terminated, `text_out` valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_prompt(
    prompt: *const c_char,
    agent_options_json: *const c_char,
    text_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(text_out, "text_out")?;
        let prompt = arg_str(prompt, "prompt")?;
        let opts = options::agent_options(opt_str(agent_options_json, "agent_options_json")?)?;
        if let Some(owner) = DEFAULT_OWNER.get() {
            owner.check("default client")?;
        }
        let client = {
            let mut slot = DEFAULT_CLIENT.lock();
            match slot.as_ref() {
                Some(c) => c.clone(),
                None => {
                    let c = Client::from_json(None)?;
                    let _ = DEFAULT_OWNER.set(crate::fork::Owner::here());
                    *slot = Some(c.clone());
                    c
                }
            }
        };
        let result = client.prompt(prompt, opts)?;
        super::run::result_to_status(&result)?;
        write_string(text_out, result.text);
        Ok(cursor_status::CURSOR_OK)
    })
}
