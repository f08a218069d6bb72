//! Runs against the real bridge, offline: the real failing turn, cancel, observe, busy, recovery.

mod common;

use std::time::{Duration, Instant};

use common::{CutProxy, Sandbox};
use cursor_sdk::{Client, ClientOptions, ErrorKind, EventKind, Next, RunStatus};

const FAIL_TEXT: &str = "Failed to connect to API key exchange endpoint";

#[test]
fn full_failing_turn_reports_the_status_message() {
    let sb = Sandbox::new();
    let client = sb.client();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    let run = agent.send_text("Say hi").unwrap();
    assert!(!run.id().is_empty(), "run id known once send returns");
    let mut kinds = Vec::new();
    for ev in run.events() {
        let ev = ev.unwrap();
        kinds.push(format!(
            "{:?}:{}:{}",
            ev.kind,
            ev.r#type(),
            ev.payload().get("status").and_then(|s| s.as_str()).unwrap_or("")
        ));
    }
    assert_eq!(kinds[0], "Message:status:RUNNING", "{kinds:?}");
    assert_eq!(kinds[1], "Message:status:ERROR", "{kinds:?}");
    assert!(kinds[2].starts_with("Result:result"), "{kinds:?}");
    assert_eq!(kinds.len(), 3, "keepalives never surface: {kinds:?}");
    let result = run.wait().unwrap();
    assert_eq!(result.status, RunStatus::Error);
    assert!(
        result.error_message.as_deref().unwrap_or("").contains(FAIL_TEXT),
        "{result:?}"
    );
    assert_eq!(run.status(), RunStatus::Error);

    // While the agent is open the bridge serves observers from its live registry (result and
    // done only). Closed, the run's durable log replays in full (with the `request` message
    // Send never shows), and resumes strictly after an observe offset.
    agent.close().unwrap();
    let replay = agent.observe(&run.id(), None).unwrap();
    let all: Vec<_> = replay.events().map(|e| e.unwrap()).collect();
    let types: Vec<_> = all.iter().map(|e| e.r#type()).collect();
    assert_eq!(types, ["request", "status", "status", "result"], "{all:?}");
    assert_eq!(replay.wait().unwrap().status, RunStatus::Error);
    let offsets: Vec<String> = all.iter().map(|e| e.offset().unwrap().to_string()).collect();
    let tail: Vec<_> = run
        .observe(Some(&offsets[1]))
        .unwrap()
        .events()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(tail.len(), 2, "resumes strictly after offset {}: {tail:?}", offsets[1]);
    assert_eq!(tail[0].offset(), Some(offsets[2].as_str()));
}

#[test]
fn cancel_mid_run_ends_cancelled_within_a_second() {
    let sb = Sandbox::new();
    let client = sb.client();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    let run = std::sync::Arc::new(agent.send_text("Say hi").unwrap());
    let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let c2 = changes.clone();
    run.on_status_change(move |s| c2.lock().unwrap().push(s));
    std::thread::sleep(Duration::from_millis(300));
    let r2 = run.clone();
    let t0 = Instant::now();
    std::thread::spawn(move || r2.cancel()).join().unwrap();
    let result = run
        .wait_timeout(Some(Duration::from_secs(5)))
        .unwrap()
        .expect("the run ended in time");
    assert!(t0.elapsed() < Duration::from_secs(1), "took {:?}", t0.elapsed());
    assert_eq!(result.status, RunStatus::Cancelled);
    assert_eq!(changes.lock().unwrap().last(), Some(&RunStatus::Cancelled));
    // Cancel on a finished run is a documented no-op.
    run.cancel();
    run.cancel();
}

#[test]
fn second_send_while_active_is_busy() {
    let sb = Sandbox::new();
    let client = sb.client();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    let run = agent.send_text("one").unwrap();
    let e = agent.send_text("two").err().expect("second send must fail");
    assert_eq!(e.kind, ErrorKind::Busy, "{e}");
    run.cancel();
    run.wait_timeout(Some(Duration::from_secs(10)))
        .unwrap()
        .expect("the run ended in time");
}

#[test]
fn send_errors_surface_from_send() {
    let sb = Sandbox::new();
    let client = sb.client();
    let no_model = client.create_agent_json(None).unwrap();
    let e = no_model.send_text("hi").err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
    assert!(e.message.contains("model"), "{e}");
    let ghost = client.agent_handle("agent-00000000-0000-0000-0000-000000000000", None);
    assert_eq!(ghost.send_text("hi").err().unwrap().kind, ErrorKind::NotFound);
}

#[test]
fn dropped_connection_mid_run_is_recovered() {
    let sb = Sandbox::new();
    let owner = sb.client();
    owner.start().unwrap();
    let proxy = CutProxy::new(&owner.bridge_url().unwrap());
    // Attach through the proxy with the owner's token.
    let client = Client::new(ClientOptions {
        bridge_url: Some(proxy.url.clone()),
        bridge_token: Some(owner.bridge_endpoint().unwrap().token),
        api_key: Some("test-dummy-key".into()),
        workspace: Some(sb.path()),
        ..ClientOptions::default()
    })
    .unwrap();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    let run = agent.send_text("Say hi").unwrap();
    let first = match run.next_event(Some(Duration::from_secs(5))).unwrap() {
        Next::Event(e) => e,
        other => panic!("expected the first event, got {other:?}"),
    };
    assert_eq!(first.r#type(), "status");
    proxy.cut();
    let rest: Vec<_> = run.events().map(|e| e.unwrap()).collect();
    let statuses: Vec<_> = rest
        .iter()
        .filter(|e| e.r#type() == "status")
        .map(|e| e.payload()["status"].as_str().unwrap().to_string())
        .collect();
    // The bridge gives a late subscriber of a live run only its result (bridge-behavior §3.4),
    // so the ERROR status may be missing; RUNNING must not come twice.
    assert!(
        statuses.len() <= 1 && statuses.iter().all(|s| s == "ERROR"),
        "no event twice: {rest:?}"
    );
    assert_eq!(
        rest.iter().filter(|e| e.kind == EventKind::Result).count(),
        1,
        "{rest:?}"
    );
    assert_eq!(rest.last().unwrap().kind, EventKind::Result);
    let result = run.wait().unwrap();
    assert_eq!(result.status, RunStatus::Error);
    assert!(result.error_message.unwrap().contains(FAIL_TEXT));
}
