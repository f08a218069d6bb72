//! `cursor_agent`: create, resume, send, and the agent's own management calls.

use std::ffi::{c_char, CString};

use super::client::cursor_client;
use super::error::cursor_error;
use super::run::cursor_run;
use super::{arg_str, c_string, call, cursor_status, handle, json, opt_str, out_ptr, quiet, take_handle, write_string};
use crate::agent::Agent;
use crate::error::Result;
use crate::options;

/// An agent handle. Its functions may be called from several threads; sends to one agent are
/// refused with `CURSOR_E_BUSY` while a run of it is active (a bridge rule). The handle keeps
/// the client's connection alive; free it before the client.
pub struct cursor_agent {
    pub(crate) agent: Agent,
    id: CString,
}

unsafe fn new_agent(out: *mut *mut cursor_agent, agent: Agent) {
    let id = c_string(agent.id().to_string());
    *out = super::into_handle(cursor_agent { agent, id });
}

/// Creates an agent. `agent_options_json` (may be NULL) is `AgentOptions` in the proto3 JSON
/// mapping plus shorthands: e.g. `{"model":"composer-2","cwd":".","name":"helper"}`; keys
/// camelCase or snake_case; unknown keys are `CURSOR_E_INVALID_ARGUMENT` naming the key path.
/// An `idempotencyKey` member makes a cloud create safe to retry (cloud creates without one
/// get a fresh key; the bridge refuses keys for local agents).
/// Local agents (no `cloud` key) default their cwd to the client's workspace; the client's API
/// key is filled in. On success `*out` owns the agent (`cursor_agent_free`). Blocks for one RPC
/// (and for the bridge's start on first use).
///
/// # Safety
/// `agent_options_json` must be NULL or NUL-terminated; `out` valid; `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_create(
    c: *mut cursor_client,
    agent_options_json: *const c_char,
    out: *mut *mut cursor_agent,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let (opts, extras) = options::agent_request_options(opt_str(agent_options_json, "agent_options_json")?)?;
        let agent = handle(c, "client")?
            .client
            .create_agent_full(opts, Vec::new(), extras.idempotency_key)?;
        agent.set_reclaim_stale_runs(extras.reclaim_stale_runs);
        new_agent(out, agent);
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Re-attaches to an existing agent by id and applies `agent_options_json` (as for create: give
/// the model and, for agents made elsewhere, the cwd). `"reclaimStaleRuns": true` makes every
/// send of this handle take the agent over from a stale run (see `cursor_agent_send`). On
/// success `*out` owns the agent. Blocks for one RPC (bounded by `requestTimeoutMs`), plus the
/// bridge's start on first use (`startupTimeoutMs`).
///
/// # Safety
/// `agent_id` must be NUL-terminated; `agent_options_json` NULL or NUL-terminated; `out` valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_resume(
    c: *mut cursor_client,
    agent_id: *const c_char,
    agent_options_json: *const c_char,
    out: *mut *mut cursor_agent,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let id = arg_str(agent_id, "agent_id")?;
        let (opts, extras) = options::agent_request_options(opt_str(agent_options_json, "agent_options_json")?)?;
        if extras.idempotency_key.is_some() {
            return Err(crate::error::Error::invalid_argument(
                "agent options: idempotencyKey is for creates and sends, not resume",
            ));
        }
        let agent = handle(c, "client")?.client.resume_agent(id, opts)?;
        agent.set_reclaim_stale_runs(extras.reclaim_stale_runs);
        new_agent(out, agent);
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The agent's id. Borrowed: valid until `cursor_agent_free`. NULL for a NULL agent.
///
/// # Safety
/// `a`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_id(a: *const cursor_agent) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(a, "agent").map_or(std::ptr::null(), |a| a.id.as_ptr())
    })
}

/// Sends a message and returns the live run once its stream is open: errors such as an unknown
/// agent, a missing model or a busy agent are returned here. `message` is plain text, or a JSON
/// `UserMessage` object (`{"text":"…","images":[{"data":{"data":"<base64>","mimeType":"image/png"}}]}`).
/// `send_options_json` (may be NULL): `model` (persists for later sends), `mode` (`"plan"`),
/// `mcpServers`, `local.force`, `cloud.envVars`, `enableDeltas`, `enableSteps`,
/// `idempotencyKey` (cloud agents), and `reclaimStaleRuns`. On success `*out` owns the run
/// (`cursor_run_free`).
///
/// A send refused because the agent is held by a run that no bridge of this client runs (made
/// by another bridge process, e.g. the queued run of every create, or left running by a bridge
/// that died) fails with `CURSOR_E_STALE_RUN`, naming the run. With `"reclaimStaleRuns": true`
/// that run is cancelled by id and the send made again.
///
/// Blocks until the stream is open and its first frame came, bounded by `requestTimeoutMs`
/// (plus the bridge's start on first use, `startupTimeoutMs`, and with reclaiming a few more
/// RPCs, each bounded the same way).
///
/// # Safety
/// `message` must be NUL-terminated; `send_options_json` NULL or NUL-terminated; `out` valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_send(
    a: *mut cursor_agent,
    message: *const c_char,
    send_options_json: *const c_char,
    out: *mut *mut cursor_run,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let agent = &handle(a, "agent")?.agent;
        let message = options::user_message(arg_str(message, "message")?)?;
        let (opts, extras) = options::send_request_options(opt_str(send_options_json, "send_options_json")?)?;
        let run = agent.send_full(message, opts, extras.idempotency_key, extras.reclaim_stale_runs)?;
        *out = super::run::new_run(run);
        Ok(cursor_status::CURSOR_OK)
    })
}

fn agent_call(
    a: *mut cursor_agent,
    err: *mut *mut cursor_error,
    f: impl FnOnce(&Agent) -> Result<()>,
) -> cursor_status {
    call(err, || {
        f(&handle(a, "agent")?.agent)?;
        Ok(cursor_status::CURSOR_OK)
    })
}

fn agent_json(
    a: *mut cursor_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
    f: impl FnOnce(&Agent) -> Result<String>,
) -> cursor_status {
    call(err, || {
        out_ptr(json_out, "json_out")?;
        let text = f(&handle(a, "agent")?.agent)?;
        write_string(json_out, text);
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Releases the bridge's in-memory agent (its durable state stays; resume brings it back).
/// The handle stays valid for management calls and must still be freed. Blocks for one RPC;
/// safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_close(a: *mut cursor_agent, err: *mut *mut cursor_error) -> cursor_status {
    agent_call(a, err, Agent::close)
}

/// Reloads the agent's durable state from its store. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_reload(a: *mut cursor_agent, err: *mut *mut cursor_error) -> cursor_status {
    agent_call(a, err, Agent::reload)
}

/// Archives the agent. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_archive(a: *mut cursor_agent, err: *mut *mut cursor_error) -> cursor_status {
    agent_call(a, err, Agent::archive)
}

/// Restores the archived agent. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_unarchive(a: *mut cursor_agent, err: *mut *mut cursor_error) -> cursor_status {
    agent_call(a, err, Agent::unarchive)
}

/// Deletes the agent and its durable data (`CURSOR_E_FAILED_PRECONDITION` while a run is live). Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_delete(a: *mut cursor_agent, err: *mut *mut cursor_error) -> cursor_status {
    agent_call(a, err, Agent::delete)
}

/// The agent's metadata from its store (`SdkAgentInfo` JSON). Owned result. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_info(
    a: *mut cursor_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    agent_json(a, json_out, err, |ag| json(&ag.info()?))
}

/// Messages recorded for the agent, as a JSON array of `AgentMessage`. `options_json` (may be
/// NULL): `limit`, `offset`, `runtime`, `cwd`, `apiKey`. Owned result.
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_messages(
    a: *mut cursor_agent,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    agent_json(a, json_out, err, |ag| {
        json(&ag.messages(options::messages_options(opt_str(options_json, "options_json")?)?)?)
    })
}

/// The agent's artifacts, as a JSON array of `{path,sizeBytes,updatedAt}`. Owned result. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_artifacts(
    a: *mut cursor_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    agent_json(a, json_out, err, |ag| json(&ag.artifacts()?))
}

/// Token usage and cost (`AgentUsage` JSON), for one run when `run_id` is not NULL. Cloud agents.
///
/// # Safety
/// `run_id` must be NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_usage(
    a: *mut cursor_agent,
    run_id: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    agent_json(a, json_out, err, |ag| json(&ag.usage(opt_str(run_id, "run_id")?)?))
}

/// Downloads an artifact. On success `*data_out` owns `*len_out` bytes, freed with
/// `cursor_bytes_free(data, len)` (`*data_out` may be NULL when the artifact is empty).
///
/// # Safety
/// `path` must be NUL-terminated; `data_out` and `len_out` valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_download_artifact(
    a: *mut cursor_agent,
    path: *const c_char,
    data_out: *mut *mut u8,
    len_out: *mut usize,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(data_out, "data_out")?;
        if len_out.is_null() {
            return Err(crate::Error::invalid_argument("len_out is NULL"));
        }
        *len_out = 0;
        let bytes = handle(a, "agent")?
            .agent
            .download_artifact(arg_str(path, "path")?)?
            .read_all()?;
        let boxed = bytes.into_boxed_slice();
        *len_out = boxed.len();
        if !boxed.is_empty() {
            *data_out = Box::into_raw(boxed) as *mut u8;
        }
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Frees bytes from `cursor_agent_download_artifact`. NULL is accepted.
///
/// # Safety
/// `data`/`len` must be exactly what the library returned, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_bytes_free(data: *mut u8, len: usize) {
    quiet((), || {
        if !data.is_null() {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(data, len)));
        }
    })
}

/// Frees an agent handle (the agent itself lives on in the bridge; see `cursor_agent_close`).
/// NULL is accepted. Runs from this agent stay valid.
///
/// # Safety
/// `a` must be NULL or an agent from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_agent_free(a: *mut cursor_agent) {
    quiet((), || drop(take_handle(a)));
}
