//! The C ABI of custom tools and stores, driven from Rust through the exported functions
//! (the C suite in tests/c covers the same from C under the sanitizers).

mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::Sandbox;
use cursor_sdk::ffi::agent::*;
use cursor_sdk::ffi::client::*;
use cursor_sdk::ffi::error::*;
use cursor_sdk::ffi::run::*;
use cursor_sdk::ffi::tools::*;
use cursor_sdk::ffi::*;

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

unsafe fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    CStr::from_ptr(p).to_string_lossy().into_owned()
}

struct State {
    freed: AtomicUsize,
    calls: AtomicUsize,
    pending: Mutex<Vec<usize>>, // calls kept for a late answer (as raw pointers)
    late: bool,
}

impl State {
    fn new(late: bool) -> State {
        State {
            freed: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            pending: Mutex::new(vec![]),
            late,
        }
    }
}

unsafe extern "C" fn on_tool(user_data: *mut c_void, call: *mut cursor_tool_call) {
    let state = &*(user_data as *const State);
    state.calls.fetch_add(1, Ordering::SeqCst);
    let args = text(cursor_tool_call_args_json(call));
    assert!(args.contains("hello from the double"), "{args}");
    assert!(!cursor_tool_call_agent_id(call).is_null());
    assert_eq!(text(cursor_tool_call_name(call)), "ctool");
    if state.late {
        state.pending.lock().unwrap().push(call as usize);
        return;
    }
    let result = cs(r#"{"from":"C"}"#);
    assert_eq!(
        cursor_tool_call_complete(call, result.as_ptr(), ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let mut err = ptr::null_mut();
    assert_eq!(
        cursor_tool_call_complete(call, result.as_ptr(), &mut err),
        cursor_status::CURSOR_E_USAGE
    );
    cursor_error_free(err);
    cursor_tool_call_free(call);
}

unsafe extern "C" fn free_state(user_data: *mut c_void) {
    (*(user_data as *const State)).freed.fetch_add(1, Ordering::SeqCst);
}

unsafe fn client_for(sb: &Sandbox) -> *mut cursor_client {
    let mut o = serde_json::to_value(sb.double_options().bridge_env).unwrap();
    o = serde_json::json!({"bridgePath": common::double_bin(), "workspace": sb.path(), "apiKey": "k", "bridgeEnv": o});
    let opts = cs(&o.to_string());
    let mut c = ptr::null_mut();
    assert_eq!(
        cursor_client_new(opts.as_ptr(), &mut c, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    c
}

unsafe fn run_to_end(c: *mut cursor_client, message: &str) -> String {
    let mut agent = ptr::null_mut();
    let opts = cs(r#"{"model":"composer-2"}"#);
    let mut err = ptr::null_mut();
    let st = cursor_agent_create(c, opts.as_ptr(), &mut agent, &mut err);
    assert_eq!(
        st,
        cursor_status::CURSOR_OK,
        "{}",
        if err.is_null() {
            String::new()
        } else {
            text(cursor_error_message(err))
        }
    );
    let mut run = ptr::null_mut();
    let msg = cs(message);
    assert_eq!(
        cursor_agent_send(agent, msg.as_ptr(), ptr::null(), &mut run, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let mut json = ptr::null_mut();
    assert_eq!(
        cursor_run_wait(run, 30_000, &mut json, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let out = text(json);
    cursor_string_free(json);
    cursor_run_free(run);
    cursor_agent_free(agent);
    out
}

#[test]
fn c_tools_answer_now_or_later_and_release_user_data_once() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb);
        let state = Arc::new(State::new(false));
        let name = cs("ctool");
        let schema = cs(r#"{"type":"object"}"#);
        let st = cursor_client_add_tool(
            c,
            name.as_ptr(),
            cs("a tool in C").as_ptr(),
            schema.as_ptr(),
            Some(on_tool),
            Arc::as_ptr(&state) as *mut c_void,
            Some(free_state),
            ptr::null_mut(),
        );
        assert_eq!(st, cursor_status::CURSOR_OK);
        let result = run_to_end(c, "scenario:tool:ctool");
        assert!(
            result.contains(r#"\"from\":\"C\""#) || result.contains("from"),
            "{result}"
        );
        assert_eq!(state.calls.load(Ordering::SeqCst), 1);
        assert_eq!(state.freed.load(Ordering::SeqCst), 0, "freed while still registered");
        cursor_client_free(c);
        assert_eq!(
            state.freed.load(Ordering::SeqCst),
            1,
            "user_data_free runs exactly once at client free"
        );
    }
}

#[test]
fn c_tool_completed_later_from_another_thread() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb);
        let state = Arc::new(State::new(true));
        let st = cursor_client_add_tool(
            c,
            cs("ctool").as_ptr(),
            ptr::null(),
            ptr::null(),
            Some(on_tool),
            Arc::as_ptr(&state) as *mut c_void,
            None,
            ptr::null_mut(),
        );
        assert_eq!(st, cursor_status::CURSOR_OK);
        let s2 = state.clone();
        let answerer = std::thread::spawn(move || loop {
            if let Some(call) = s2.pending.lock().unwrap().pop() {
                let call = call as *mut cursor_tool_call;
                let r = cs("\"later\"");
                assert_eq!(
                    cursor_tool_call_complete(call, r.as_ptr(), ptr::null_mut()),
                    cursor_status::CURSOR_OK
                );
                cursor_tool_call_free(call);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        });
        let result = run_to_end(c, "scenario:tool:ctool");
        answerer.join().unwrap();
        assert!(result.contains("later"), "{result}");
        cursor_client_free(c);
    }
}

#[test]
fn c_tool_registration_errors_leave_user_data_with_the_caller() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb);
        let state = State::new(false);
        let data = &state as *const State as *mut c_void;
        let mut err = ptr::null_mut();
        for (name, schema, f) in [
            (
                "bad name!",
                None,
                Some(on_tool as unsafe extern "C" fn(*mut c_void, *mut cursor_tool_call)),
            ),
            ("ok", Some("[1]"), Some(on_tool)),
            ("ok", Some("{not json"), Some(on_tool)),
            ("ok", None, None),
        ] {
            let schema = schema.map(cs);
            let st = cursor_client_add_tool(
                c,
                cs(name).as_ptr(),
                ptr::null(),
                schema.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
                f,
                data,
                Some(free_state),
                &mut err,
            );
            assert_eq!(st, cursor_status::CURSOR_E_INVALID_ARGUMENT, "{name}");
            assert!(!err.is_null());
            cursor_error_free(err);
        }
        assert_eq!(
            cursor_client_add_tool(
                ptr::null_mut(),
                ptr::null(),
                ptr::null(),
                ptr::null(),
                None,
                data,
                None,
                ptr::null_mut()
            ),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
        cursor_client_free(c);
        assert_eq!(state.freed.load(Ordering::SeqCst), 0);
        // NULL handles everywhere are harmless.
        cursor_tool_call_free(ptr::null_mut());
        assert!(cursor_tool_call_name(ptr::null()).is_null());
        assert_eq!(
            cursor_tool_call_complete(ptr::null_mut(), cs("1").as_ptr(), ptr::null_mut()),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
        assert_eq!(
            cursor_store_reply_ok(ptr::null_mut(), ptr::null(), ptr::null_mut()),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
    }
}

struct StoreState {
    agents: Mutex<std::collections::HashMap<String, serde_json::Value>>,
    freed: AtomicUsize,
}

unsafe extern "C" fn on_store(
    user_data: *mut c_void,
    substore: *const c_char,
    method: *const c_char,
    input_json: *const c_char,
    reply: *mut cursor_store_reply,
) {
    let state = &*(user_data as *const StoreState);
    let (sub, m) = (text(substore), text(method));
    let input: serde_json::Value = serde_json::from_str(&text(input_json)).unwrap();
    let out: Option<serde_json::Value> = match (sub.as_str(), m.as_str()) {
        ("agents", "create" | "update") => {
            let a = input["agent"].clone();
            state
                .agents
                .lock()
                .unwrap()
                .insert(a["agentId"].as_str().unwrap().into(), a.clone());
            Some(a)
        }
        ("agents", "get") => state
            .agents
            .lock()
            .unwrap()
            .get(input["agentId"].as_str().unwrap_or(""))
            .cloned(),
        ("agents", "list") => {
            Some(serde_json::json!({"items": state.agents.lock().unwrap().values().cloned().collect::<Vec<_>>()}))
        }
        ("runs", "create" | "update") => Some(input["run"].clone()),
        ("runs", "list") => Some(serde_json::json!({"items": []})),
        ("agents", "delete") if input.to_string().contains("fail-me") => {
            let msg = cs("store says no");
            cursor_store_reply_error(reply, msg.as_ptr(), ptr::null_mut());
            return;
        }
        _ => None,
    };
    let json = out.map(|v| cs(&v.to_string()));
    assert_eq!(
        cursor_store_reply_ok(
            reply,
            json.as_ref().map_or(ptr::null(), |j| j.as_ptr()),
            ptr::null_mut()
        ),
        cursor_status::CURSOR_OK
    );
    let mut err = ptr::null_mut();
    assert_eq!(
        cursor_store_reply_ok(reply, ptr::null(), &mut err),
        cursor_status::CURSOR_E_USAGE,
        "second reply"
    );
    cursor_error_free(err);
}

unsafe extern "C" fn free_store(user_data: *mut c_void) {
    (*(user_data as *const StoreState)).freed.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn c_store_carries_agents_on_the_real_bridge() {
    let sb = Sandbox::new();
    unsafe {
        let o = sb.options();
        let opts = serde_json::json!({"bridgePath": o.bridge_path, "workspace": sb.path(), "apiKey": "k", "bridgeEnv": o.bridge_env});
        let state = StoreState {
            agents: Mutex::new(Default::default()),
            freed: AtomicUsize::new(0),
        };
        let mut c = ptr::null_mut();
        let st = cursor_client_new_with_store(
            cs(&opts.to_string()).as_ptr(),
            Some(on_store),
            &state as *const StoreState as *mut c_void,
            Some(free_store),
            &mut c,
            ptr::null_mut(),
        );
        assert_eq!(st, cursor_status::CURSOR_OK);
        let mut agent = ptr::null_mut();
        assert_eq!(
            cursor_agent_create(c, cs(r#"{"model":"composer-2"}"#).as_ptr(), &mut agent, ptr::null_mut()),
            cursor_status::CURSOR_OK
        );
        let id = text(cursor_agent_id(agent));
        assert!(state.agents.lock().unwrap().contains_key(&id));
        let mut info = ptr::null_mut();
        assert_eq!(
            cursor_agent_info(agent, &mut info, ptr::null_mut()),
            cursor_status::CURSOR_OK
        );
        assert!(text(info).contains(&id));
        cursor_string_free(info);
        cursor_agent_free(agent);
        cursor_client_free(c);
        assert_eq!(state.freed.load(Ordering::SeqCst), 1);

        // Attach mode cannot take a store; the user data stays the caller's.
        let mut c = ptr::null_mut();
        let mut err = ptr::null_mut();
        let attach = cs(r#"{"bridgeUrl":"http://127.0.0.1:1","bridgeToken":"t"}"#);
        let st = cursor_client_new_with_store(
            attach.as_ptr(),
            Some(on_store),
            &state as *const StoreState as *mut c_void,
            Some(free_store),
            &mut c,
            &mut err,
        );
        assert_eq!(st, cursor_status::CURSOR_E_INVALID_ARGUMENT);
        assert!(c.is_null());
        cursor_error_free(err);
        assert_eq!(state.freed.load(Ordering::SeqCst), 1);
    }
}

/// Counts calls in progress; `free_slow` records whether one was running when it ran.
#[derive(Default)]
struct SlowState {
    running: AtomicUsize,
    freed: AtomicUsize,
    freed_while_running: AtomicUsize,
}

unsafe extern "C" fn on_slow_tool(user_data: *mut c_void, call: *mut cursor_tool_call) {
    let state = &*(user_data as *const SlowState);
    state.running.fetch_add(1, Ordering::SeqCst);
    // Longer than the old callback server's 2 s grace at stop.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    cursor_tool_call_complete(call, cs("\"slow\"").as_ptr(), ptr::null_mut());
    cursor_tool_call_free(call);
    state.running.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn free_slow(user_data: *mut c_void) {
    let state = &*(user_data as *const SlowState);
    if state.running.load(Ordering::SeqCst) > 0 {
        state.freed_while_running.fetch_add(1, Ordering::SeqCst);
    }
    state.freed.fetch_add(1, Ordering::SeqCst);
}

unsafe fn send_tool_run(c: *mut cursor_client) -> (*mut cursor_agent, *mut cursor_run) {
    let mut agent = ptr::null_mut();
    assert_eq!(
        cursor_agent_create(c, cs(r#"{"model":"composer-2"}"#).as_ptr(), &mut agent, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let mut run = ptr::null_mut();
    let msg = cs("scenario:tool:ctool");
    assert_eq!(
        cursor_agent_send(agent, msg.as_ptr(), ptr::null(), &mut run, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    (agent, run)
}

#[test]
fn client_free_waits_for_a_running_tool_and_frees_user_data_while_agents_live() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb);
        let state = SlowState::default();
        assert_eq!(
            cursor_client_add_tool(
                c,
                cs("ctool").as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(on_slow_tool),
                &state as *const SlowState as *mut c_void,
                Some(free_slow),
                ptr::null_mut(),
            ),
            cursor_status::CURSOR_OK
        );
        let (agent, run) = send_tool_run(c);
        assert!(
            common::eventually(std::time::Duration::from_secs(10), || state
                .running
                .load(Ordering::SeqCst)
                == 1),
            "the tool was never called"
        );
        cursor_client_free(c);
        assert_eq!(
            state.running.load(Ordering::SeqCst),
            0,
            "a tool callback outlived cursor_client_free"
        );
        assert_eq!(
            state.freed.load(Ordering::SeqCst),
            1,
            "user_data_free did not run at client free"
        );
        assert_eq!(state.freed_while_running.load(Ordering::SeqCst), 0);
        // The agent and run outlive the client: freeing them later releases nothing twice.
        cursor_run_free(run);
        cursor_agent_free(agent);
        assert_eq!(state.freed.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn client_free_answers_a_pending_tool_call_and_a_late_answer_is_a_usage_error() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb);
        let state = State::new(true);
        assert_eq!(
            cursor_client_add_tool(
                c,
                cs("ctool").as_ptr(),
                ptr::null(),
                ptr::null(),
                Some(on_tool),
                &state as *const State as *mut c_void,
                Some(free_state),
                ptr::null_mut(),
            ),
            cursor_status::CURSOR_OK
        );
        let (agent, run) = send_tool_run(c);
        assert!(
            common::eventually(std::time::Duration::from_secs(10), || !state
                .pending
                .lock()
                .unwrap()
                .is_empty()),
            "the tool was never called"
        );
        let t0 = std::time::Instant::now();
        cursor_client_free(c);
        // Bounded by the bridge's stop, not by the 300 s tool timeout.
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{:?}", t0.elapsed());
        assert_eq!(state.freed.load(Ordering::SeqCst), 1);
        let call = state.pending.lock().unwrap().pop().unwrap() as *mut cursor_tool_call;
        let mut err = ptr::null_mut();
        assert_eq!(
            cursor_tool_call_complete(call, cs("1").as_ptr(), &mut err),
            cursor_status::CURSOR_E_USAGE
        );
        cursor_error_free(err);
        cursor_tool_call_free(call);
        cursor_run_free(run);
        cursor_agent_free(agent);
        assert_eq!(state.freed.load(Ordering::SeqCst), 1);
    }
}
