//! Custom tools written in the host language, and the custom store, behind the callback server.
//!
//! A tool handler gets the arguments (JSON), the tool-call id and the agent id, and answers at
//! once or later through a [`ToolCompletion`] that can be completed exactly once from any thread
//! (a second completion is an error, not a crash). A forgotten call is completed with an error
//! after the per-call timeout. Results that are not JSON objects are wrapped; handler errors
//! become error results the model sees (the run goes on).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::{json, Map, Value};

use crate::callback::{Dispatch, Reply};
use crate::error::{Error, ErrorKind, Result};

/// Default time a tool call may take before it is answered with an error.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// One call of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool_name: String,
    pub args: Value,
    pub tool_call_id: Option<String>,
    pub agent_id: String,
}

/// What a tool produced: a JSON value (objects pass through, anything else is wrapped as text
/// content) or an error message the model sees.
pub type ToolOutcome = std::result::Result<Value, String>;

/// Completes one tool call, exactly once, from any thread.
#[derive(Clone)]
pub struct ToolCompletion {
    slot: Arc<Mutex<Option<SyncSender<ToolOutcome>>>>,
}

impl ToolCompletion {
    fn new() -> (ToolCompletion, Receiver<ToolOutcome>) {
        let (tx, rx) = sync_channel(1);
        (
            ToolCompletion {
                slot: Arc::new(Mutex::new(Some(tx))),
            },
            rx,
        )
    }

    /// Delivers the outcome. A second completion (or one after the call timed out and was
    /// answered) is a `Usage` error.
    pub fn complete(&self, outcome: ToolOutcome) -> Result<()> {
        let tx = self
            .slot
            .lock()
            .take()
            .ok_or_else(|| Error::usage("this tool call was already completed"))?;
        // The receiver is gone only when the call timed out: report that as a late completion.
        tx.send(outcome)
            .map_err(|_| Error::usage("this tool call already timed out and was answered"))
    }

    /// Whether the call still waits for its outcome.
    pub fn is_pending(&self) -> bool {
        self.slot.lock().is_some()
    }
}

/// A tool's behaviour. Called on a callback-server thread; calls for different tool calls may
/// run concurrently. Answer through `done` now or later. The handler is dropped once the tool
/// is unregistered and no call of it is running, i.e. when it can no longer be called, and at
/// the latest before `Client::shutdown` returns (which waits for calls in progress).
pub trait ToolHandler: Send + Sync {
    fn call(&self, call: ToolCall, done: ToolCompletion);
}

/// A synchronous handler from a closure.
struct FnTool<F>(F);

impl<F> ToolHandler for FnTool<F>
where
    F: Fn(&ToolCall) -> ToolOutcome + Send + Sync,
{
    fn call(&self, call: ToolCall, done: ToolCompletion) {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.0)(&call)))
            .unwrap_or_else(|_| Err("the tool handler panicked".into()));
        let _ = done.complete(outcome);
    }
}

/// A tool: its name, what the model is told, its input schema, and its handler.
#[derive(Clone)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    pub handler: Arc<dyn ToolHandler>,
}

impl Tool {
    /// A tool answered synchronously by a closure.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        f: impl Fn(&ToolCall) -> ToolOutcome + Send + Sync + 'static,
    ) -> Tool {
        Tool::with_handler(name, description, input_schema, Arc::new(FnTool(f)))
    }

    /// A tool with any handler (e.g. one that completes later from another thread).
    pub fn with_handler(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: Arc<dyn ToolHandler>,
    ) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema,
            handler,
        }
    }

    /// The `CustomToolDefinition` declared to the bridge.
    pub(crate) fn definition(&self) -> Result<crate::proto::CustomToolDefinition> {
        let schema = match &self.input_schema {
            Value::Null => json!({"type": "object"}),
            v @ Value::Object(_) => v.clone(),
            _ => {
                return Err(Error::invalid_argument(format!(
                    "tool {}: the input schema must be a JSON object",
                    self.name
                )))
            }
        };
        let input_schema = crate::options::decode(&format!("tool {} input schema", self.name), schema)?;
        Ok(crate::proto::CustomToolDefinition {
            description: Some(self.description.clone()).filter(|d| !d.is_empty()),
            input_schema: Some(input_schema),
            output_schema: None,
        })
    }
}

/// A custom store: the bridge forwards every agent-store operation here.
pub trait Store: Send + Sync {
    /// `substore`: agents | runs | runEvents | checkpoints; `method`: get | create | update |
    /// delete | list | append. Return the bare record (or `None` for null); an `Err` becomes a
    /// Connect error the bridge reports to the caller.
    fn call(&self, substore: &str, method: &str, input: Value) -> std::result::Result<Option<Value>, String>;
}

/// Tools (client-wide and per agent) and the store, dispatched by the callback server.
///
/// Every dispatch holds a clone of its handler only while it is counted in `calls.active`, so
/// once `close` has seen that count reach zero and emptied the maps, the handlers (and the
/// user data behind them) are dropped on the closing thread.
pub(crate) struct Registry {
    client_tools: RwLock<HashMap<String, Tool>>,
    agent_tools: RwLock<HashMap<String, HashMap<String, Tool>>>,
    store: RwLock<Option<Arc<dyn Store>>>,
    timeout: Duration,
    calls: Mutex<Calls>,
    /// Signalled whenever `calls.active` drops.
    idle: Condvar,
}

/// Dispatch bookkeeping for `close`.
#[derive(Default)]
struct Calls {
    closed: bool,
    active: usize,
    /// Tool calls waiting for their completion, and whether their handler is still running:
    /// `cancel` answers those whose handler has returned.
    pending: HashMap<u64, (ToolCompletion, bool)>,
    next_id: u64,
}

thread_local! {
    /// Registries (by address) this thread is dispatching for: `close` from inside a callback
    /// must not wait for that callback.
    static DISPATCHING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Counts one dispatch as active until dropped; declare it before anything holding a handler.
struct Active<'a>(&'a Registry);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        let me = self.0 as *const Registry as usize;
        DISPATCHING.with(|d| {
            let mut d = d.borrow_mut();
            if let Some(i) = d.iter().rposition(|&r| r == me) {
                d.swap_remove(i);
            }
        });
        self.0.calls.lock().active -= 1;
        self.0.idle.notify_all();
    }
}

const CLOSED_BEFORE_ANSWER: &str = "the client was closed before the tool answered";

fn closed_error() -> Error {
    Error::new(ErrorKind::Unavailable, "the client was closed")
}

impl Registry {
    pub(crate) fn new(store: Option<Arc<dyn Store>>, timeout: Duration) -> Registry {
        Registry {
            client_tools: RwLock::new(HashMap::new()),
            agent_tools: RwLock::new(HashMap::new()),
            store: RwLock::new(store),
            timeout,
            calls: Mutex::new(Calls::default()),
            idle: Condvar::new(),
        }
    }

    pub(crate) fn add_client_tool(&self, tool: Tool) -> Result<()> {
        validate_name(&tool.name)?;
        tool.definition()?;
        let calls = self.calls.lock();
        if calls.closed {
            return Err(Error::usage("the client was shut down"));
        }
        // Under `calls` so a concurrent `close` cannot miss the new tool.
        self.client_tools.write().insert(tool.name.clone(), tool);
        drop(calls);
        Ok(())
    }

    pub(crate) fn remove_client_tool(&self, name: &str) {
        self.client_tools.write().remove(name);
    }

    /// After `close` the tools are dropped at once: nothing can call them any more.
    pub(crate) fn add_agent_tools(&self, agent_id: &str, tools: Vec<Tool>) {
        let map = tools.into_iter().map(|t| (t.name.clone(), t)).collect();
        let calls = self.calls.lock();
        if !calls.closed {
            self.agent_tools.write().insert(agent_id.to_string(), map);
        }
    }

    pub(crate) fn remove_agent_tools(&self, agent_id: &str) {
        self.agent_tools.write().remove(agent_id);
    }

    pub(crate) fn client_tools(&self) -> Vec<Tool> {
        self.client_tools.read().values().cloned().collect()
    }

    pub(crate) fn has_tools(&self) -> bool {
        !self.client_tools.read().is_empty() || !self.agent_tools.read().is_empty()
    }

    /// Whether the client was created with a custom store (false once closed).
    pub(crate) fn has_store(&self) -> bool {
        self.store.read().is_some()
    }

    fn find(&self, agent_id: &str, name: &str) -> Option<Tool> {
        let per_agent = self.agent_tools.read().get(agent_id).and_then(|m| m.get(name).cloned());
        per_agent.or_else(|| self.client_tools.read().get(name).cloned())
    }

    /// Counts a dispatch as active, or refuses it once the registry is closed.
    fn enter(&self) -> Result<Active<'_>> {
        let mut calls = self.calls.lock();
        if calls.closed {
            return Err(closed_error());
        }
        calls.active += 1;
        DISPATCHING.with(|d| d.borrow_mut().push(self as *const Registry as usize));
        Ok(Active(self))
    }

    /// Closes the registry for good: new dispatches are answered with an error, tool calls
    /// waiting for a (late) completion are answered with an error at once, then it waits for
    /// every callback in progress (user code: no timeout) and drops every handler, so each
    /// tool's and the store's `user_data_free` has run exactly once when it returns.
    /// Idempotent. Called from inside a callback of this registry it does not wait for that
    /// callback: the handler it runs is released when it returns.
    pub(crate) fn close(&self) {
        let me = self as *const Registry as usize;
        let own = DISPATCHING.with(|d| d.borrow().iter().filter(|&&r| r == me).count());
        self.cancel_waits();
        let mut calls = self.calls.lock();
        while calls.active > own {
            self.idle.wait(&mut calls);
        }
        drop(calls);
        let tools = std::mem::take(&mut *self.client_tools.write());
        let agents = std::mem::take(&mut *self.agent_tools.write());
        let store = self.store.write().take();
        drop((tools, agents, store));
    }

    /// Refuses new dispatches and answers every tool call waiting for a completion with an
    /// error, so no dispatch waits for anything but user code already running.
    fn cancel_waits(&self) {
        let waiting: Vec<ToolCompletion> = {
            let mut calls = self.calls.lock();
            calls.closed = true;
            calls
                .pending
                .values()
                .filter(|(_, in_handler)| !in_handler)
                .map(|(done, _)| done.clone())
                .collect()
        };
        for done in waiting {
            let _ = done.complete(Err(CLOSED_BEFORE_ANSWER.into()));
        }
    }
}

pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(Error::invalid_argument(format!(
            "tool name {name:?}: use 1-64 characters from A-Z a-z 0-9 _ -"
        )));
    }
    Ok(())
}

fn str_field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a str> {
    v.get(camel).or_else(|| v.get(snake)).and_then(Value::as_str)
}

/// A result the model can read: objects pass through, strings become text content, other
/// values their JSON text.
pub(crate) fn wrap_result(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        Value::String(s) => json!({"content": [{"type": "text", "text": s}]}),
        other => json!({"content": [{"type": "text", "text": other.to_string()}]}),
    }
}

fn error_result(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

impl Dispatch for Registry {
    fn call_tool(&self, request: Value) -> Reply {
        let _active = self.enter()?;
        let name = str_field(&request, "toolName", "tool_name").unwrap_or("").to_string();
        let agent_id = str_field(&request, "agentId", "agent_id").unwrap_or("").to_string();
        let Some(tool) = self.find(&agent_id, &name) else {
            return Err(Error::invalid_argument(format!(
                "no tool {name:?} is registered for agent {agent_id:?}"
            )));
        };
        let call = ToolCall {
            tool_name: name.clone(),
            args: request.get("args").cloned().unwrap_or(Value::Object(Map::new())),
            tool_call_id: str_field(&request, "toolCallId", "tool_call_id").map(str::to_string),
            agent_id,
        };
        let (done, rx) = ToolCompletion::new();
        let id = {
            let mut calls = self.calls.lock();
            if calls.closed {
                return Err(closed_error());
            }
            calls.next_id += 1;
            let id = calls.next_id;
            calls.pending.insert(id, (done.clone(), true));
            id
        };
        let guard = done.clone();
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.handler.call(call, done))).is_err() {
            let _ = guard.complete(Err(format!("the {name} tool handler panicked")));
        }
        {
            let mut calls = self.calls.lock();
            if calls.closed {
                // `cancel` left this call alone while its handler ran: answer it now.
                let _ = guard.complete(Err(CLOSED_BEFORE_ANSWER.into()));
            } else if let Some(p) = calls.pending.get_mut(&id) {
                p.1 = false;
            }
        }
        let outcome = match rx.recv_timeout(self.timeout) {
            Ok(o) => o,
            Err(RecvTimeoutError::Timeout) => {
                // Close the slot so a late completion is a clean usage error.
                guard.slot.lock().take();
                Err(format!(
                    "the {name} tool did not answer within {} ms",
                    self.timeout.as_millis()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(format!("the {name} tool dropped its call without answering")),
        };
        self.calls.lock().pending.remove(&id);
        let result = match outcome {
            Ok(v) => wrap_result(v),
            Err(message) => error_result(&message),
        };
        Ok(json!({ "result": result }))
    }

    fn call_store(&self, request: Value) -> Reply {
        let _active = self.enter()?;
        let Some(store) = self.store.read().clone() else {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "no custom store is configured on this client",
            ));
        };
        let substore = str_field(&request, "substore", "substore").unwrap_or("");
        let method = str_field(&request, "method", "method").unwrap_or("");
        let input = request.get("input").cloned().unwrap_or(Value::Null);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.call(substore, method, input)))
            .unwrap_or_else(|_| Err("the store handler panicked".into()));
        match outcome {
            Ok(Some(output)) => Ok(json!({ "output": output })),
            Ok(None) => Ok(json!({})),
            Err(message) => Err(Error::internal(message)),
        }
    }

    fn cancel(&self) {
        self.cancel_waits();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_wrapped_into_objects() {
        assert_eq!(wrap_result(json!({"a": 1})), json!({"a": 1}));
        assert_eq!(
            wrap_result(json!("hi")),
            json!({"content": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(
            wrap_result(json!(42)),
            json!({"content": [{"type": "text", "text": "42"}]})
        );
        assert_eq!(
            wrap_result(json!(null)),
            json!({"content": [{"type": "text", "text": "null"}]})
        );
    }

    #[test]
    fn completion_happens_once() {
        let (done, rx) = ToolCompletion::new();
        let other = done.clone();
        std::thread::spawn(move || other.complete(Ok(json!(1))).unwrap())
            .join()
            .unwrap();
        assert_eq!(rx.recv().unwrap(), Ok(json!(1)));
        assert_eq!(done.complete(Ok(json!(2))).unwrap_err().kind, ErrorKind::Usage);
        assert!(!done.is_pending());
    }

    #[test]
    fn dispatch_errors_timeouts_and_panics_become_error_results() {
        let reg = Registry::new(None, Duration::from_millis(100));
        reg.add_client_tool(Tool::new("fail", "", Value::Null, |_| Err("nope".into())))
            .unwrap();
        reg.add_client_tool(Tool::new("boom", "", Value::Null, |_| panic!("kaboom")))
            .unwrap();
        struct Never;
        impl ToolHandler for Never {
            fn call(&self, _c: ToolCall, done: ToolCompletion) {
                std::mem::forget(done);
            }
        }
        reg.add_client_tool(Tool::with_handler("never", "", Value::Null, Arc::new(Never)))
            .unwrap();
        for (name, want) in [("fail", "nope"), ("boom", "panicked"), ("never", "did not answer")] {
            let r = reg
                .call_tool(json!({"toolName": name, "agentId": "a", "args": {}}))
                .unwrap();
            assert_eq!(r["result"]["isError"], true, "{name}");
            assert!(
                r["result"]["content"][0]["text"].as_str().unwrap().contains(want),
                "{name}: {r}"
            );
        }
        let unknown = reg
            .call_tool(json!({"toolName": "missing", "agentId": "a"}))
            .unwrap_err();
        assert_eq!(unknown.kind, ErrorKind::InvalidArgument);
        assert!(validate_name("bad name!").is_err());
        assert!(reg
            .add_client_tool(Tool::new("s", "", json!([1]), |_| Ok(json!(1))))
            .is_err());
    }

    #[test]
    fn per_agent_tools_win_and_handlers_drop_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counted(Arc<AtomicUsize>);
        impl ToolHandler for Counted {
            fn call(&self, _c: ToolCall, done: ToolCompletion) {
                let _ = done.complete(Ok(json!("agent")));
            }
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let released = Arc::new(AtomicUsize::new(0));
        let reg = Registry::new(None, DEFAULT_TOOL_TIMEOUT);
        reg.add_client_tool(Tool::new("t", "", Value::Null, |_| Ok(json!("client"))))
            .unwrap();
        reg.add_agent_tools(
            "a1",
            vec![Tool::with_handler(
                "t",
                "",
                Value::Null,
                Arc::new(Counted(released.clone())),
            )],
        );
        let r = reg.call_tool(json!({"toolName": "t", "agentId": "a1"})).unwrap();
        assert_eq!(r["result"]["content"][0]["text"], "agent");
        let r = reg.call_tool(json!({"toolName": "t", "agentId": "a2"})).unwrap();
        assert_eq!(r["result"]["content"][0]["text"], "client");
        drop(reg);
        assert_eq!(released.load(Ordering::SeqCst), 1);
    }

    /// Counts drops of a handler and runs `f` for each call.
    struct Probe<F>(Arc<AtomicUsize>, F);
    impl<F: Fn(ToolCompletion) + Send + Sync> ToolHandler for Probe<F> {
        fn call(&self, _c: ToolCall, done: ToolCompletion) {
            (self.1)(done)
        }
    }
    impl<F> Drop for Probe<F> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn close_waits_for_user_code_cancels_pending_calls_and_drops_handlers_once() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let reg = Arc::new(Registry::new(None, DEFAULT_TOOL_TIMEOUT));
        let (entered_tx, entered) = std::sync::mpsc::channel::<()>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (entered_tx, released) = (Mutex::new(entered_tx), Mutex::new(released));
        reg.add_client_tool(Tool::with_handler(
            "busy",
            "",
            Value::Null,
            Arc::new(Probe(dropped.clone(), move |done: ToolCompletion| {
                entered_tx.lock().send(()).unwrap();
                released.lock().recv().unwrap();
                done.complete(Ok(json!("finished"))).unwrap();
            })),
        ))
        .unwrap();
        let kept = Arc::new(Mutex::new(None));
        let kept2 = kept.clone();
        reg.add_agent_tools(
            "a",
            vec![Tool::with_handler(
                "later",
                "",
                Value::Null,
                Arc::new(Probe(dropped.clone(), move |done: ToolCompletion| {
                    *kept2.lock() = Some(done)
                })),
            )],
        );
        let call = |name: &'static str| {
            let reg = reg.clone();
            std::thread::spawn(move || reg.call_tool(json!({"toolName": name, "agentId": "a"})))
        };
        let busy = call("busy");
        let later = call("later");
        entered.recv().unwrap();
        while kept.lock().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let reg2 = reg.clone();
        let closer = std::thread::spawn(move || reg2.close());
        // The pending call is answered at once; the one inside user code holds `close`.
        let r = later.join().unwrap().unwrap();
        assert!(
            r["result"]["content"][0]["text"].as_str().unwrap().contains("closed"),
            "{r}"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(!closer.is_finished(), "close returned while a callback was running");
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        release.send(()).unwrap();
        closer.join().unwrap();
        assert_eq!(dropped.load(Ordering::SeqCst), 2, "every handler dropped by close");
        let r = busy.join().unwrap().unwrap();
        assert_eq!(r["result"]["content"][0]["text"], "finished");
        // The late completion is a usage error, and nothing runs any more.
        let late = kept.lock().take().unwrap();
        assert_eq!(late.complete(Ok(json!(1))).unwrap_err().kind, ErrorKind::Usage);
        let refused = reg.call_tool(json!({"toolName": "busy", "agentId": "a"})).unwrap_err();
        assert_eq!(refused.kind, ErrorKind::Unavailable);
        assert_eq!(reg.call_store(json!({})).unwrap_err().kind, ErrorKind::Unavailable);
        let again = Tool::with_handler(
            "x",
            "",
            Value::Null,
            Arc::new(Probe(dropped.clone(), |_: ToolCompletion| {})),
        );
        assert_eq!(reg.add_client_tool(again).unwrap_err().kind, ErrorKind::Usage);
        assert_eq!(dropped.load(Ordering::SeqCst), 3, "a refused tool is dropped at once");
        reg.close();
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn close_from_inside_a_callback_does_not_wait_for_it() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let reg = Arc::new(Registry::new(None, DEFAULT_TOOL_TIMEOUT));
        let inner = Arc::downgrade(&reg);
        let d2 = dropped.clone();
        reg.add_client_tool(Tool::with_handler(
            "closer",
            "",
            Value::Null,
            Arc::new(Probe(dropped.clone(), move |done: ToolCompletion| {
                inner.upgrade().unwrap().close();
                // Its own handler lives until this call returns.
                assert_eq!(d2.load(Ordering::SeqCst), 0);
                done.complete(Ok(json!("closed myself"))).unwrap();
            })),
        ))
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reg2 = reg.clone();
        std::thread::spawn(move || tx.send(reg2.call_tool(json!({"toolName": "closer", "agentId": "a"}))));
        let r = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("close deadlocked")
            .unwrap();
        assert_eq!(r["result"]["content"][0]["text"], "closed myself");
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "released when the callback returned");
    }
}
