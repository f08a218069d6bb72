//! Every call returns within its documented bound whatever the bridge does: the bridge is stopped
//! (SIGSTOP) at each phase — start, unary call, stream open, mid-stream (which goes through
//! recovery), cancel, free — and each call's return is measured against its bound.
//!
//! Bounds under test: `requestTimeoutMs` for unary calls and stream opens, `streamIdleTimeoutMs`
//! for a silent stream plus its re-attach, `requestTimeoutMs` for a cancel to end the stream,
//! `startupTimeoutMs` for a start, and a few seconds for a free. Each limit below is the bound
//! plus a margin for a shared, noisy machine; the bug each case guards against took 60 s or more.

mod common;

use std::time::{Duration, Instant};

use common::{alive, Sandbox};
use cursor_sdk::{Client, ErrorKind, Next, RunStatus};

const REQUEST_MS: u64 = 1500;
const IDLE_MS: u64 = 2000;
/// Slack for a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(1500);

/// Keeps a process stopped for its lifetime; SIGCONT when dropped (so a failing test leaves
/// nothing stopped behind).
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Stopped {
        assert!(alive(pid));
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0 as libc::pid_t, libc::SIGCONT) };
    }
}

fn client(sb: &Sandbox, double: bool) -> Client {
    let mut o = if double { sb.double_options() } else { sb.options() };
    o.request_timeout_ms = Some(REQUEST_MS);
    o.stream_idle_timeout_ms = Some(IDLE_MS);
    Client::new(o).unwrap()
}

fn model() -> cursor_sdk::proto::AgentOptions {
    cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

fn within<T>(bound: Duration, what: &str, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let v = f();
    let took = t0.elapsed();
    assert!(took <= bound + MARGIN, "{what} took {took:?}; bound {bound:?}");
    v
}

#[test]
fn unary_call_to_a_stopped_bridge_ends_at_the_request_timeout() {
    let sb = Sandbox::new();
    let c = client(&sb, false);
    c.ping().unwrap();
    let pid = c.bridge_pid().unwrap();
    let _stop = Stopped::new(pid);
    let e = within(Duration::from_millis(REQUEST_MS), "ping", || c.ping().unwrap_err());
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    // A management call that is retried (maxRetries 0 here) is bounded the same way.
    let e = within(Duration::from_millis(REQUEST_MS), "list agents", || {
        c.list_agents(Default::default()).unwrap_err()
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    // Free: Shutdown gets 1 s, then signals (a stopped node dies only by KILL).
    within(Duration::from_secs(6), "shutdown", || c.shutdown());
    assert!(!alive(pid) || common::eventually(Duration::from_secs(2), || !alive(pid)));
}

#[test]
fn send_to_a_stopped_bridge_ends_at_the_request_timeout() {
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    let _stop = Stopped::new(c.bridge_pid().unwrap());
    let e = within(Duration::from_millis(REQUEST_MS), "send", || {
        agent
            .send_text("scenario:normal")
            .err()
            .expect("a stopped bridge cannot take a send")
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
}

#[test]
fn a_send_that_timed_out_does_not_leave_the_agent_busy() {
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    {
        let _stop = Stopped::new(c.bridge_pid().unwrap());
        // A run that would go on for a minute once the bridge reads the request.
        let e = agent
            .send_text("scenario:slow:50")
            .err()
            .expect("a stopped bridge cannot take a send");
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    }
    // The bridge wakes up and starts that run; the library cancels it, so the agent is free
    // again within moments (not after the minute the run would take).
    let t0 = Instant::now();
    let run = loop {
        match agent.send_text("scenario:normal") {
            Ok(run) => break run,
            Err(e) if e.kind == ErrorKind::Busy && t0.elapsed() < Duration::from_secs(15) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("after {:?}: {e}", t0.elapsed()),
        }
    };
    assert_eq!(run.wait().unwrap().status, RunStatus::Finished);
}

#[test]
fn a_stream_whose_bridge_stops_ends_within_idle_plus_reattach() {
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    assert!(matches!(run.next_event(None).unwrap(), Next::Event(_)));
    let _stop = Stopped::new(c.bridge_pid().unwrap());
    // Idle timeout, then re-attaching (ObserveRun) fails at its own bound.
    let bound = Duration::from_millis(IDLE_MS + IDLE_MS.max(REQUEST_MS) + 200);
    let e = within(bound, "reading to the end", || loop {
        match run.next_event(None) {
            Ok(Next::Event(_)) => continue,
            Ok(other) => panic!("the stream ended without an error: {other:?}"),
            Err(e) => break e,
        }
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert_eq!(run.status(), RunStatus::Error);
    assert!(matches!(run.next_event(Some(Duration::ZERO)), Ok(Next::End)));
}

#[test]
fn cancel_returns_at_once_and_ends_the_stream_even_when_the_bridge_is_stopped() {
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    assert!(!run.id().is_empty());
    let _stop = Stopped::new(c.bridge_pid().unwrap());
    within(Duration::from_millis(50), "cancel", || run.cancel());
    within(Duration::ZERO, "a second cancel", || run.cancel());
    // The bridge cannot take it: the run is ended here within the request timeout.
    let t0 = Instant::now();
    let e = loop {
        match run.next_event(Some(Duration::from_secs(30))) {
            Ok(Next::Event(_)) => continue,
            Ok(other) => panic!("the stream ended without the cancel's error: {other:?}"),
            Err(e) => break e,
        }
    };
    let took = t0.elapsed();
    assert!(
        took <= Duration::from_millis(REQUEST_MS) + MARGIN,
        "the cancel ended the stream after {took:?}"
    );
    assert_eq!(e.kind, ErrorKind::Cancelled, "{e}");
    assert_eq!(run.status(), RunStatus::Cancelled);
    let result = run.wait().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert!(result.error_message.unwrap().contains("stopped here"));
}

#[test]
fn cancel_before_the_bridge_answers_is_kept_and_ends_the_run() {
    // Cancel while the reader waits on a stopped bridge, then let the bridge go on: the cancel
    // reaches it and the run ends cancelled.
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    {
        let _stop = Stopped::new(c.bridge_pid().unwrap());
        within(Duration::from_millis(50), "cancel", || run.cancel());
        std::thread::sleep(Duration::from_millis(200));
    }
    let result = within(Duration::from_millis(REQUEST_MS), "wait after cancel", || {
        run.wait().unwrap()
    });
    assert_eq!(result.status, RunStatus::Cancelled, "{result:?}");
}

#[test]
fn a_start_that_never_becomes_ready_ends_at_the_startup_timeout() {
    let sb = Sandbox::new();
    // A launcher that stops itself before it starts the bridge.
    let script = sb.path().join("stopped-bridge");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nkill -STOP $$\nexec '{}' \"$@\"\n",
            common::real_bridge().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut o = sb.options();
    o.bridge_path = Some(script);
    o.startup_timeout_ms = Some(1000);
    let c = Client::new(o).unwrap();
    let e = within(Duration::from_secs(1) + Duration::from_secs(6), "start", || {
        c.start().unwrap_err()
    });
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed, "{e}");
    assert!(e.message.contains("timed out"), "{e}");
}

#[test]
fn freeing_a_run_never_waits_on_the_network() {
    let sb = Sandbox::new();
    let c = client(&sb, true);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    let _stop = Stopped::new(c.bridge_pid().unwrap());
    // Let the reader hit the idle timeout and block in its re-attach call, then drop the run.
    std::thread::sleep(Duration::from_millis(IDLE_MS + 300));
    within(Duration::from_millis(100), "dropping the run", || drop(run));
}

#[test]
fn recovery_against_a_stopped_bridge_ends_at_its_bound() {
    // A second client reaches the bridge through a proxy whose connections the test can cut:
    // the stream breaks while the bridge is stopped, so the re-attach meets a silent bridge.
    let sb = Sandbox::new();
    let owner = client(&sb, true);
    let endpoint = owner.bridge_endpoint().unwrap();
    let proxy = common::CutProxy::new(&endpoint.url);
    let c = Client::new(cursor_sdk::ClientOptions {
        bridge_url: Some(proxy.url.clone()),
        bridge_token: Some(endpoint.token.clone()),
        workspace: Some(sb.path()),
        api_key: Some("test-dummy-key".into()),
        request_timeout_ms: Some(REQUEST_MS),
        stream_idle_timeout_ms: Some(IDLE_MS),
        ..Default::default()
    })
    .unwrap();
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    assert!(matches!(run.next_event(None).unwrap(), Next::Event(_)));
    let _stop = Stopped::new(owner.bridge_pid().unwrap());
    proxy.cut();
    let bound = Duration::from_millis(IDLE_MS.max(REQUEST_MS) + 200);
    let e = within(bound, "the re-attach", || loop {
        match run.next_event(None) {
            Ok(Next::Event(_)) => continue,
            Ok(other) => panic!("the stream ended without an error: {other:?}"),
            Err(e) => break e,
        }
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
}
