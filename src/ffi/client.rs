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
}

/// Creates a client. `options_json` may be NULL (or `"{}"`): the bridge is found automatically
/// (`CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`), the workspace is the current
/// directory and the API key comes from `CURSOR_API_KEY`. Keys (camelCase or snake_case):
/// `bridgePath`, `workspace`, `apiKey`, `bridgeUrl` + `bridgeToken` (attach to a running bridge,
/// which is then never stopped by us; also `CURSOR_SDK_BRIDGE_URL`/`CURSOR_SDK_BRIDGE_TOKEN`),
/// `startupTimeoutMs` (30000), `requestTimeoutMs` (60000), `streamIdleTimeoutMs` (60000),
/// `maxFrameBytes`, `verbose`, `eager` (start the bridge now instead of on first use),
/// `bridgeEnv` (object), `bridgeArgs` (array). Unknown keys are `CURSOR_E_INVALID_ARGUMENT`.
///
/// On success `*out` owns a client to free with `cursor_client_free`. Without `eager` this does
/// not block; with it, it waits for the bridge (up to `startupTimeoutMs`).
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
        *out = super::into_handle(cursor_client { client });
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Frees a client and stops the bridge it launched (Shutdown, then signals; at most ~7 s,
/// usually well under 100 ms). An attached bridge is left running. Agents and runs made from
/// this client fail with `CURSOR_E_USAGE` afterwards: free them first. NULL is accepted. Must
/// not be called while another thread still uses this client.
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
/// `startupTimeoutMs`.
#[no_mangle]
pub extern "C" fn cursor_client_start(c: *mut cursor_client, err: *mut *mut cursor_error) -> cursor_status {
    call(err, || {
        handle(c, "client")?.client.start()?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Checks that the bridge is up and accepts our token (`Ping`). Starts the bridge if needed. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
#[no_mangle]
pub extern "C" fn cursor_client_ping(c: *mut cursor_client, err: *mut *mut cursor_error) -> cursor_status {
    call(err, || {
        handle(c, "client")?.client.ping()?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The bridge's version as JSON: `{"bridgeVersion","protocolVersion","capabilities":[…]}`.
/// On success `*json_out` is an owned string for `cursor_string_free`. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
#[no_mangle]
pub extern "C" fn cursor_client_version(
    c: *mut cursor_client,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(json_out, "json_out")?;
        let v = handle(c, "client")?.client.version()?;
        let text = json!({"bridgeVersion": v.bridge_version, "protocolVersion": v.protocol_version, "capabilities": v.capabilities});
        write_string(json_out, text.to_string());
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Stops a launched bridge now; later calls on this client fail with `CURSOR_E_USAGE`.
/// Idempotent and safe from any thread (e.g. from a signal-handling thread, not a signal handler).
#[no_mangle]
pub extern "C" fn cursor_client_shutdown(c: *mut cursor_client) {
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

/// The process-wide client behind `cursor_prompt`, made on first use with default options.
static DEFAULT_CLIENT: Lazy<Mutex<Option<Client>>> = Lazy::new(|| Mutex::new(None));

/// One-shot: with a process-wide default client (default options, started on first use and
/// stopped at exit), creates an agent from `agent_options_json` (NULL allowed, e.g.
/// `{"model":"composer-2"}`), sends `prompt`, waits for the end and closes the agent. On success
/// `*text_out` owns the final assistant text. A run that ended in error or was cancelled gives
/// `CURSOR_E_INTERNAL`/`CURSOR_E_CANCELLED` with the run's reason as the message. Blocks for the
/// whole run; thread-safe.
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
        let client = {
            let mut slot = DEFAULT_CLIENT.lock();
            match slot.as_ref() {
                Some(c) => c.clone(),
                None => {
                    let c = Client::from_json(None)?;
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
