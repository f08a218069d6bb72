//! Queued tools through the C ABI: calls wait on the client until the host's own loop takes
//! them (`cursor_client_next_tool_call`), woken by `cursor_client_tool_fd`; no library thread
//! runs host code. Against the bridge double (the C suite tests/c/test_queued_tools.c covers
//! the same from C under the sanitizers).

mod common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;
use std::time::{Duration, Instant};

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

unsafe fn client_for(sb: &Sandbox, extra: serde_json::Value) -> *mut cursor_client {
    let env = serde_json::to_value(sb.double_options().bridge_env).unwrap();
    let mut o = serde_json::json!({"bridgePath": common::double_bin(), "workspace": sb.path(), "apiKey": "k", "bridgeEnv": env});
    o.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut c = ptr::null_mut();
    assert_eq!(
        cursor_client_new(cs(&o.to_string()).as_ptr(), &mut c, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    c
}

unsafe fn add_queued(c: *mut cursor_client, name: &str) {
    let mut err = ptr::null_mut();
    let st = cursor_client_add_queued_tool(c, cs(name).as_ptr(), cs("queued").as_ptr(), ptr::null(), &mut err);
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
}

unsafe fn send(c: *mut cursor_client, message: &str) -> (*mut cursor_agent, *mut cursor_run) {
    let mut agent = ptr::null_mut();
    assert_eq!(
        cursor_agent_create(c, cs(r#"{"model":"composer-2"}"#).as_ptr(), &mut agent, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let mut run = ptr::null_mut();
    assert_eq!(
        cursor_agent_send(agent, cs(message).as_ptr(), ptr::null(), &mut run, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    (agent, run)
}

/// Whether `fd` becomes readable within `ms`.
fn readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) == 1 && p.revents & libc::POLLIN != 0 }
}

unsafe fn next(c: *mut cursor_client) -> Option<*mut cursor_tool_call> {
    let mut call = ptr::null_mut();
    match cursor_client_next_tool_call(c, &mut call, ptr::null_mut()) {
        cursor_status::CURSOR_OK => {
            assert!(!call.is_null());
            Some(call)
        }
        cursor_status::CURSOR_TIMEOUT => {
            assert!(call.is_null());
            None
        }
        other => panic!("cursor_client_next_tool_call: {other:?}"),
    }
}

unsafe fn wait_result(run: *mut cursor_run) -> String {
    let mut json = ptr::null_mut();
    assert_eq!(
        cursor_run_wait(run, 30_000, &mut json, ptr::null_mut()),
        cursor_status::CURSOR_OK
    );
    let out = text(json);
    cursor_string_free(json);
    out
}

#[test]
fn queued_calls_wake_the_descriptor_and_are_answered_on_the_polling_thread() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb, serde_json::json!({}));
        add_queued(c, "qtool");
        let fd = cursor_client_tool_fd(c);
        assert!(fd >= 0);
        assert_eq!(cursor_client_tool_fd(c), fd, "one descriptor per client");
        assert!(!readable(fd, 0), "readable with nothing queued");
        assert!(next(c).is_none());
        let (agent, run) = send(c, "scenario:tools:2");
        let mut answered = 0;
        let t0 = Instant::now();
        while answered < 2 {
            assert!(t0.elapsed() < Duration::from_secs(20), "the calls never came");
            if !readable(fd, 100) {
                continue;
            }
            // Readable means a call is there, now.
            let call = next(c).expect("the descriptor was readable with nothing queued");
            assert_eq!(text(cursor_tool_call_name(call)), "qtool");
            assert!(text(cursor_tool_call_args_json(call)).contains("hello from the double"));
            assert!(!cursor_tool_call_id(call).is_null());
            assert!(!cursor_tool_call_agent_id(call).is_null());
            let answer = cs(&format!(r#"{{"queued":"answer-{answered}"}}"#));
            assert_eq!(
                cursor_tool_call_complete(call, answer.as_ptr(), ptr::null_mut()),
                cursor_status::CURSOR_OK
            );
            cursor_tool_call_free(call);
            answered += 1;
        }
        let result = wait_result(run);
        assert!(result.contains("answer-0") && result.contains("answer-1"), "{result}");
        assert!(!readable(fd, 0), "still readable with the queue empty");
        assert!(next(c).is_none());
        cursor_run_free(run);
        cursor_agent_free(agent);
        cursor_client_free(c);
    }
}

#[test]
fn a_call_answered_by_the_tool_timeout_is_not_handed_over() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb, serde_json::json!({"toolTimeoutMs": 300}));
        add_queued(c, "qtool");
        let fd = cursor_client_tool_fd(c);
        let (agent, run) = send(c, "scenario:tool:qtool");
        assert!(readable(fd, 20_000), "the call never came");
        let result = wait_result(run);
        assert!(result.contains("did not answer within 300 ms"), "{result}");
        assert!(next(c).is_none(), "a call already answered was handed over");
        assert!(!readable(fd, 0));
        cursor_run_free(run);
        cursor_agent_free(agent);
        cursor_client_free(c);
    }
}

#[test]
fn client_free_answers_queued_and_handed_over_calls() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb, serde_json::json!({}));
        add_queued(c, "qtool");
        let fd = cursor_client_tool_fd(c);
        let (agent, run) = send(c, "scenario:tools:2");
        let t0 = Instant::now();
        let taken = loop {
            assert!(t0.elapsed() < Duration::from_secs(20), "the calls never came");
            if let Some(call) = next(c) {
                break call;
            }
            readable(fd, 100);
        };
        // Wait for the second call to be queued too, then free with it untaken.
        assert!(readable(fd, 20_000), "the second call never came");
        let t0 = Instant::now();
        cursor_client_free(c);
        // Bounded by the bridge's stop, not by the 300 s tool timeout.
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let mut err = ptr::null_mut();
        assert_eq!(
            cursor_tool_call_complete(taken, cs("1").as_ptr(), &mut err),
            cursor_status::CURSOR_E_USAGE
        );
        assert!(
            text(cursor_error_message(err)).contains("already"),
            "{}",
            text(cursor_error_message(err))
        );
        cursor_error_free(err);
        cursor_tool_call_free(taken);
        cursor_run_free(run);
        cursor_agent_free(agent);
    }
}

#[test]
fn queued_tool_argument_errors() {
    let sb = Sandbox::new();
    unsafe {
        let c = client_for(&sb, serde_json::json!({}));
        let mut err = ptr::null_mut();
        for (client, name, schema, want) in [
            (
                ptr::null_mut(),
                "ok",
                ptr::null(),
                cursor_status::CURSOR_E_INVALID_ARGUMENT,
            ),
            (c, "bad name!", ptr::null(), cursor_status::CURSOR_E_INVALID_ARGUMENT),
            (c, "ok", c"[1]".as_ptr(), cursor_status::CURSOR_E_INVALID_ARGUMENT),
            (c, "ok", c"{not json".as_ptr(), cursor_status::CURSOR_E_INVALID_ARGUMENT),
        ] {
            let st = cursor_client_add_queued_tool(client, cs(name).as_ptr(), ptr::null(), schema, &mut err);
            assert_eq!(st, want, "{name}");
            assert!(!err.is_null());
            cursor_error_free(err);
            err = ptr::null_mut();
        }
        assert_eq!(
            cursor_client_add_queued_tool(c, ptr::null(), ptr::null(), ptr::null(), ptr::null_mut()),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
        assert_eq!(
            cursor_client_next_tool_call(c, ptr::null_mut(), ptr::null_mut()),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
        let mut call = ptr::null_mut();
        assert_eq!(
            cursor_client_next_tool_call(ptr::null_mut(), &mut call, ptr::null_mut()),
            cursor_status::CURSOR_E_INVALID_ARGUMENT
        );
        assert_eq!(cursor_client_tool_fd(ptr::null_mut()), -1);
        cursor_client_free(c);
    }
}
