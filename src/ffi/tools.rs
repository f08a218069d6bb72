//! Custom tools and custom stores with C callbacks.

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::client::cursor_client;
use super::error::cursor_error;
use super::run::Notifier;
use super::{arg_str, c_string, call, cursor_status, handle, json_arg, opt_json, opt_str, out_ptr, quiet, take_handle};
use crate::client::{Client, ClientOptions};
use crate::error::Error;
use crate::fork::Owner;
use crate::tools::{Store, Tool, ToolCall, ToolCompletion, ToolHandler};

/// Releases a `user_data` pointer; called exactly once.
pub type cursor_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Tool callback. Called on a library thread, possibly concurrently for different calls.
/// `call` is owned by you: answer it with `cursor_tool_call_complete` or `cursor_tool_call_fail`
/// (now, or later from any thread), and free it with `cursor_tool_call_free`. Must not throw or
/// longjmp.
pub type cursor_tool_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, call: *mut cursor_tool_call)>;

/// Store callback: answer through `reply` (`cursor_store_reply_ok` or `cursor_store_reply_error`)
/// before returning. `substore` is "agents", "runs", "runEvents" or "checkpoints"; `method` is
/// "get", "create", "update", "delete", "list" or "append"; `input_json` the operation's input.
/// All pointers are borrowed for the call. Called on library threads, possibly concurrently.
pub type cursor_store_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        substore: *const c_char,
        method: *const c_char,
        input_json: *const c_char,
        reply: *mut cursor_store_reply,
    ),
>;

/// One tool call, handed to a `cursor_tool_fn`. Its accessors' strings live until
/// `cursor_tool_call_free`. Completion functions may be called from any thread.
pub struct cursor_tool_call {
    name: CString,
    args: CString,
    id: Option<CString>,
    agent_id: CString,
    done: ToolCompletion,
}

/// The reply slot of one store call, valid only during the `cursor_store_fn` call.
pub struct cursor_store_reply {
    answer: Option<std::result::Result<Option<Value>, String>>,
}

/// A caller's `user_data` with its release function, run on drop unless the registration
/// failed (then the pointer stays the caller's).
pub(super) struct UserData {
    ptr: *mut c_void,
    free: cursor_free_fn,
    armed: AtomicBool,
}
// SAFETY: by registering a callback the caller hands `user_data` to library threads.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

impl UserData {
    pub(super) fn new(ptr: *mut c_void, free: cursor_free_fn) -> UserData {
        UserData {
            ptr,
            free,
            armed: AtomicBool::new(true),
        }
    }

    pub(super) fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    fn disarm(&self) {
        self.armed.store(false, Ordering::Release);
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if let (Some(free), true) = (self.free, self.armed.load(Ordering::Acquire)) {
            // SAFETY: the caller's release function with its own pointer, exactly once.
            unsafe { free(self.ptr) };
        }
    }
}

struct CTool {
    f: unsafe extern "C" fn(*mut c_void, *mut cursor_tool_call),
    data: UserData,
}

impl ToolHandler for CTool {
    fn call(&self, call: ToolCall, done: ToolCompletion) {
        let handle = super::into_handle(cursor_tool_call {
            name: c_string(call.tool_name),
            args: c_string(call.args.to_string()),
            id: call.tool_call_id.map(c_string),
            agent_id: c_string(call.agent_id),
            done,
        });
        // SAFETY: the caller's callback; it owns `handle` from here on.
        unsafe { (self.f)(self.data.ptr, handle) };
    }
}

/// Registers a tool for every local agent this client creates or resumes from now on (it is
/// declared in their `local.custom_tools`; creating a cloud agent, or one that disallows the
/// `mcp` tool group, then fails with `CURSOR_E_INVALID_ARGUMENT` rather than losing the tool).
/// `name`: 1-64 of `A-Z a-z 0-9 _ -`. `input_schema_json`: a JSON Schema object (NULL means
/// `{"type":"object"}`). `fn` is called for each call (see `cursor_tool_fn`). `user_data_free`
/// (may be NULL) runs exactly once, when the tool can no longer be called: after a replacing
/// registration once no call of it is running, and at the latest before `cursor_client_free`
/// returns, whatever agent or run handles are still alive (`cursor_client_free` waits for
/// tool calls in progress to return, answers calls still waiting for a late answer with an
/// error — completing them afterwards is `CURSOR_E_USAGE` — and then releases every tool).
/// Called from inside a tool or store callback, `cursor_client_free` does not wait for that
/// callback: its own `user_data_free` runs as it returns. On failure nothing is registered and
/// `user_data_free` is not called. A tool of the same name is replaced. After
/// `cursor_client_free` has begun, registering fails with `CURSOR_E_USAGE`.
///
/// # Safety
/// Strings must be NUL-terminated (or NULL where allowed); `fn` and `user_data_free` must be
/// safe to call from other threads with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_add_tool(
    c: *mut cursor_client,
    name: *const c_char,
    description: *const c_char,
    input_schema_json: *const c_char,
    r#fn: cursor_tool_fn,
    user_data: *mut c_void,
    user_data_free: cursor_free_fn,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let client = &handle(c, "client")?.client;
        let name = arg_str(name, "name")?;
        let description = opt_str(description, "description")?.unwrap_or("");
        let schema = opt_json(input_schema_json, "input_schema_json")?.unwrap_or(Value::Null);
        let Some(f) = r#fn else {
            return Err(Error::invalid_argument("fn is NULL"));
        };
        // Validate before taking ownership of user_data, so a failure leaves it with the caller.
        crate::tools::validate_name(name)?;
        let probe = Tool::new(name, description, schema.clone(), |_| Ok(Value::Null));
        probe.definition()?;
        let handler = Arc::new(CTool {
            f,
            data: UserData::new(user_data, user_data_free),
        });
        if let Err(e) = client.add_tool(Tool::with_handler(name, description, schema, handler.clone())) {
            handler.data.disarm();
            return Err(e);
        }
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The tool's name. Borrowed until `cursor_tool_call_free`.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_name(call: *const cursor_tool_call) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(call, "call").map_or(std::ptr::null(), |c| c.name.as_ptr())
    })
}

/// The arguments as JSON text (an object; numbers are doubles). Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_args_json(call: *const cursor_tool_call) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(call, "call").map_or(std::ptr::null(), |c| c.args.as_ptr())
    })
}

/// The tool-call id (to match stream events), or NULL. Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_id(call: *const cursor_tool_call) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(call, "call")
            .ok()
            .and_then(|c| c.id.as_ref())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// The id of the agent whose run called the tool. Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_agent_id(call: *const cursor_tool_call) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(call, "call").map_or(std::ptr::null(), |c| c.agent_id.as_ptr())
    })
}

/// Answers a tool call with a result: any JSON value (an object passes through; a string or
/// other value is wrapped as text content). Exactly once per call, from any thread: a second
/// answer (or one after the call timed out) is `CURSOR_E_USAGE`. Malformed JSON is
/// `CURSOR_E_INVALID_ARGUMENT` and leaves the call unanswered.
///
/// # Safety
/// `call` must be a live call handle; `result_json` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_complete(
    call: *mut cursor_tool_call,
    result_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    super::call(err, || {
        let c = handle(call, "call")?;
        let value = json_arg(result_json, "result_json")?;
        c.done.complete(Ok(value))?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Answers a tool call with an error the model sees (the run goes on). Exactly once per call,
/// like `cursor_tool_call_complete`.
///
/// # Safety
/// `call` must be a live call handle; `message` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_fail(
    call: *mut cursor_tool_call,
    message: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    super::call(err, || {
        let c = handle(call, "call")?;
        c.done.complete(Err(arg_str(message, "message")?.to_string()))?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Frees a tool call. A call still unanswered is answered with an error ("dropped without an
/// answer"). NULL is accepted. Do not free a call another thread is completing.
///
/// # Safety
/// `call` must be NULL or a call handle not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_tool_call_free(call: *mut cursor_tool_call) {
    quiet((), || {
        if let Some(c) = take_handle(call) {
            if c.done.is_pending() {
                let _ = c.done.complete(Err(format!(
                    "the {} tool call was dropped without an answer",
                    c.name.to_string_lossy()
                )));
            }
        }
    })
}

/// Calls of a client's queued tools, handed over by `cursor_client_next_tool_call`, with the
/// wake descriptor made by `cursor_client_tool_fd`. Holds at most one call per callback
/// connection (`crate::callback::MAX_CONNECTIONS`): each queued call keeps its connection
/// waiting for the answer.
pub(crate) struct ToolQueue {
    state: Mutex<QueueState>,
    /// The process that made the client: a forked child must not touch the parent's lock.
    owner: Owner,
}

#[derive(Default)]
struct QueueState {
    calls: VecDeque<cursor_tool_call>,
    notifier: Option<Notifier>,
}

impl Default for ToolQueue {
    fn default() -> ToolQueue {
        ToolQueue {
            state: Mutex::new(QueueState::default()),
            owner: Owner::here(),
        }
    }
}

impl ToolQueue {
    fn check_process(&self) -> crate::error::Result<()> {
        self.owner.check("client")
    }

    /// Queues a call; the descriptor is readable from now until the queue is empty again.
    fn push(&self, call: cursor_tool_call) {
        let mut state = self.state.lock();
        state.calls.push_back(call);
        if let Some(n) = &state.notifier {
            n.signal();
        }
    }

    /// The oldest call still waiting for its answer (one answered meanwhile, by the tool
    /// timeout or the client closing, is dropped). Lowers the descriptor once the queue is empty.
    fn pop(&self) -> Option<cursor_tool_call> {
        let mut state = self.state.lock();
        let next = std::iter::from_fn(|| state.calls.pop_front()).find(|c| c.done.is_pending());
        if state.calls.is_empty() {
            if let Some(n) = &state.notifier {
                n.clear();
            }
        }
        next
    }

    fn fd(&self) -> i32 {
        let mut state = self.state.lock();
        if state.notifier.is_none() {
            let Some(n) = Notifier::new() else { return -1 };
            if !state.calls.is_empty() {
                n.signal();
            }
            state.notifier = Some(n);
        }
        state.notifier.as_ref().map_or(-1, Notifier::read_fd)
    }
}

/// The handler of a queued tool: hands each call to the client's queue.
struct QueuedTool(Arc<ToolQueue>);

impl ToolHandler for QueuedTool {
    fn call(&self, call: ToolCall, done: ToolCompletion) {
        self.0.push(cursor_tool_call {
            name: c_string(call.tool_name),
            args: c_string(call.args.to_string()),
            id: call.tool_call_id.map(c_string),
            agent_id: c_string(call.agent_id),
            done,
        });
    }
}

/// Registers a queued tool: like `cursor_client_add_tool` (same name rules, scope and
/// replacement; `description` may be NULL; `input_schema_json` may be NULL, meaning
/// `{"type":"object"}`), but no callback runs on a library thread. Each call waits on the client until
/// `cursor_client_next_tool_call` hands it over, for hosts that must answer on their own thread
/// (event loops, scripting VMs such as LuaJIT, game engines); `cursor_client_tool_fd` wakes
/// their loop. A call left unanswered is answered with an error after the tool timeout, and
/// `cursor_client_free` answers every queued or handed-over call still unanswered with the error
/// "the client was closed before the tool answered" (completing one afterwards is
/// `CURSOR_E_USAGE`). The queue is bounded: each waiting call holds one of the callback
/// server's 64 connections, and further calls wait in the bridge. Does not block. After `cursor_client_free` has begun, fails with
/// `CURSOR_E_USAGE`.
///
/// # Safety
/// `c` a live client; strings NUL-terminated (or NULL where allowed); `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_add_queued_tool(
    c: *mut cursor_client,
    name: *const c_char,
    description: *const c_char,
    input_schema_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let c = handle(c, "client")?;
        c.tool_queue.check_process()?;
        let name = arg_str(name, "name")?;
        let description = opt_str(description, "description")?.unwrap_or("");
        let schema = opt_json(input_schema_json, "input_schema_json")?.unwrap_or(Value::Null);
        let handler = Arc::new(QueuedTool(c.tool_queue.clone()));
        c.client
            .add_tool(Tool::with_handler(name, description, schema, handler))?;
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Hands over the oldest queued tool call: `CURSOR_OK` with `*out` owned by you (answer it
/// with `cursor_tool_call_complete`/`cursor_tool_call_fail`, from any thread, and free it with
/// `cursor_tool_call_free`), or `CURSOR_TIMEOUT` with `*out` NULL when none is queued. Never
/// blocks (it only takes a short lock). Safe from any thread; each call is handed over once.
///
/// # Safety
/// `c` a live client; `out` a valid pointer; `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_next_tool_call(
    c: *mut cursor_client,
    out: *mut *mut cursor_tool_call,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let c = handle(c, "client")?;
        c.tool_queue.check_process()?;
        Ok(match c.tool_queue.pop() {
            Some(next) => {
                *out = super::into_handle(next);
                cursor_status::CURSOR_OK
            }
            None => cursor_status::CURSOR_TIMEOUT,
        })
    })
}

/// A descriptor that is readable while queued tool calls wait (see
/// `cursor_client_add_queued_tool`), for `poll`/`select`/kqueue/epoll loops: when readable,
/// call `cursor_client_next_tool_call` until it returns `CURSOR_TIMEOUT` (which lowers it).
/// Close-on-exec and non-blocking, like `cursor_run_wait_fd`. Owned by the client (do not close
/// or read it); valid until `cursor_client_free`, which closes it. Returns -1 on error, in a
/// forked child, or where unsupported (Windows).
///
/// # Safety
/// `c` NULL or a live client.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_tool_fd(c: *mut cursor_client) -> i32 {
    quiet(-1, || match handle(c, "client") {
        Ok(c) if c.tool_queue.check_process().is_ok() => c.tool_queue.fd(),
        _ => -1,
    })
}

struct CStore {
    f: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *const c_char, *mut cursor_store_reply),
    data: UserData,
}

impl Store for CStore {
    fn call(&self, substore: &str, method: &str, input: Value) -> std::result::Result<Option<Value>, String> {
        let (s, m, i) = (
            c_string(substore.into()),
            c_string(method.into()),
            c_string(input.to_string()),
        );
        let mut reply = cursor_store_reply { answer: None };
        // SAFETY: the caller's callback; every pointer lives until it returns.
        unsafe { (self.f)(self.data.ptr, s.as_ptr(), m.as_ptr(), i.as_ptr(), &mut reply) };
        reply
            .answer
            .unwrap_or_else(|| Err(format!("the store callback did not reply to {substore}.{method}")))
    }
}

/// Creates a client (like `cursor_client_new`) whose bridge keeps all local agent state in your
/// store: it is launched with a custom local store, and every store operation calls `fn`
/// (see `cursor_store_fn`; return bare records, e.g. the agent object for agents.get, and NULL
/// for a miss). `user_data_free` (may be NULL) runs exactly once after the last call, before
/// `cursor_client_free` returns, whatever agent or run handles are still alive
/// (`cursor_client_free` waits for store calls in progress to return; as for tools, from
/// inside a callback it does not wait for that callback); on failure here it is not called.
/// Attach mode (`bridgeUrl`) cannot take a store.
///
/// # Safety
/// As for `cursor_client_new`; `fn`/`user_data_free` must be safe from other threads.
#[no_mangle]
pub unsafe extern "C" fn cursor_client_new_with_store(
    options_json: *const c_char,
    r#fn: cursor_store_fn,
    user_data: *mut c_void,
    user_data_free: cursor_free_fn,
    out: *mut *mut cursor_client,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let opts = ClientOptions::from_json(opt_str(options_json, "options_json")?)?;
        let Some(f) = r#fn else {
            return Err(Error::invalid_argument("fn is NULL"));
        };
        if opts.bridge_url.is_some() {
            return Err(Error::invalid_argument(
                "a store handler needs a launched bridge, not bridgeUrl",
            ));
        }
        let store = Arc::new(CStore {
            f,
            data: UserData::new(user_data, user_data_free),
        });
        let client = match Client::with_store(opts, store.clone()) {
            Ok(c) => c,
            Err(e) => {
                store.data.disarm();
                return Err(e);
            }
        };
        *out = super::into_handle(cursor_client::new(client));
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The reply behind a callback's pointer, if it was not answered yet.
///
/// # Safety
/// `reply` must be NULL or the pointer passed to the running callback.
unsafe fn unanswered<'a>(reply: *mut cursor_store_reply) -> crate::error::Result<&'a mut cursor_store_reply> {
    let r = reply.as_mut().ok_or_else(|| Error::invalid_argument("reply is NULL"))?;
    if r.answer.is_some() {
        return Err(Error::usage("this store call was already answered"));
    }
    Ok(r)
}

/// Replies to a store call with its output: JSON text, or NULL for a null result (a miss, a
/// delete). Once per call, before the callback returns (a second reply is `CURSOR_E_USAGE`).
///
/// # Safety
/// `reply` must be the pointer passed to the running callback.
#[no_mangle]
pub unsafe extern "C" fn cursor_store_reply_ok(
    reply: *mut cursor_store_reply,
    output_json: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let r = unanswered(reply)?;
        let output = opt_json(output_json, "output_json")?;
        r.answer = Some(Ok(output.filter(|v| !v.is_null())));
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Replies to a store call with a failure; the bridge reports it to the caller of the agent
/// operation. Once per call, before the callback returns.
///
/// # Safety
/// `reply` must be the pointer passed to the running callback; `message` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn cursor_store_reply_error(
    reply: *mut cursor_store_reply,
    message: *const c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let r = unanswered(reply)?;
        r.answer = Some(Err(arg_str(message, "message")?.to_string()));
        Ok(cursor_status::CURSOR_OK)
    })
}
