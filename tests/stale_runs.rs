//! Stuck agents on the real bridge: a run that no bridge of this client runs (the `queued` run
//! every create makes, seen from another bridge process; or a run left `running` by a bridge
//! whose host was SIGKILLed) refuses sends with `StaleRun`, naming the run; cancel by id or
//! `reclaimStaleRuns` takes the agent over.

mod common;

use std::io::BufRead;
use std::time::Duration;

use common::Sandbox;
use cursor_sdk::{ErrorKind, Next, RunStatus};

fn model() -> cursor_sdk::proto::AgentOptions {
    cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

fn text(t: &str) -> cursor_sdk::proto::UserMessage {
    cursor_sdk::proto::UserMessage::text(t)
}

/// An agent created by one client (one bridge process) that never sent.
fn created_elsewhere(sb: &Sandbox) -> String {
    let first = sb.client();
    let id = first.create_agent(model()).unwrap().id().to_string();
    first.shutdown();
    id
}

/// Cancels a run the test started and waits for its end (the offline turn would take ~16 s).
fn finish(run: cursor_sdk::Run) {
    run.cancel();
    let r = run.wait().unwrap();
    assert!(r.status.is_terminal());
}

#[test]
fn an_agent_created_by_another_bridge_is_stale_until_its_run_is_cancelled_by_id() {
    let sb = Sandbox::new();
    let id = created_elsewhere(&sb);
    let c = sb.client();
    let agent = c.resume_agent(&id, model()).unwrap();
    let e = agent
        .send_text("hi")
        .err()
        .expect("the queued run of another bridge holds the agent");
    assert_eq!(e.kind, ErrorKind::StaleRun, "{e}");
    let run_id = e.run_id().expect("the error names the run").to_string();
    assert!(
        e.message.contains(&run_id) && e.message.contains("reclaimStaleRuns"),
        "{e}"
    );
    // The plain busy case stays `Busy`: nothing else changed.
    c.cancel_run(&id, &run_id, None).unwrap();
    c.cancel_run(&id, &run_id, None).unwrap(); // a run that is over: nothing happens
    let run = agent.send_text("hi").unwrap();
    assert_ne!(run.id(), run_id);
    finish(run);
}

#[test]
fn reclaim_stale_runs_takes_the_agent_over_and_sends() {
    let sb = Sandbox::new();
    let id = created_elsewhere(&sb);
    let c = sb.client();
    let agent = c.resume_agent(&id, model()).unwrap();
    let run = agent
        .send_full(text("hi"), Default::default(), None, true)
        .expect("reclaimStaleRuns sends");
    assert_eq!(run.status(), RunStatus::Running);
    // A run this client streams is never reclaimed: a second send is plainly busy.
    let e = agent
        .send_full(text("again"), Default::default(), None, true)
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::Busy, "{e}");
    finish(run);
}

#[test]
fn cancel_run_validates_and_reports_unknown_runs() {
    let sb = Sandbox::new();
    let c = sb.client();
    assert_eq!(
        c.cancel_run("", "run-1", None).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    let agent = c.create_agent(model()).unwrap();
    let e = c
        .cancel_run(agent.id(), "run-00000000-0000-0000-0000-000000000000", None)
        .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::NotFound | ErrorKind::InvalidArgument),
        "{e}"
    );
}

/// The host of the SIGKILL test: creates an agent, sends, prints `<agent> <run>`, then waits.
#[test]
#[ignore = "run as a subprocess by a_run_left_running_by_a_killed_host_is_reclaimed"]
fn host_for_stale_run_test() {
    let dir = std::env::var("STALE_HOST_SANDBOX").expect("run by the parent test");
    let sb = Sandbox {
        dir: tempfile::TempDir::new().unwrap(),
    };
    let mut o = sb.options();
    o.workspace = Some(dir.clone().into());
    o.bridge_env.insert("HOME".into(), format!("{dir}/home"));
    let c = cursor_sdk::Client::new(o).unwrap();
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("hi").unwrap();
    assert!(matches!(
        run.next_event(Some(Duration::from_secs(10))),
        Ok(Next::Event(_))
    ));
    println!("READY {} {}", agent.id(), run.id());
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn a_run_left_running_by_a_killed_host_is_stale_and_reclaimed() {
    let sb = Sandbox::new();
    let mut host = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "host_for_stale_run_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STALE_HOST_SANDBOX", sb.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(host.stdout.take().unwrap()).lines();
    let ready = lines
        .find_map(|l| l.ok().and_then(|l| l.split_once("READY ").map(|(_, r)| r.to_string())))
        .expect("the host printed its agent and run");
    let (agent_id, run_id) = ready.split_once(' ').unwrap();
    unsafe { libc::kill(host.id() as libc::pid_t, libc::SIGKILL) };
    host.wait().unwrap();

    let c = sb.client();
    let agent = c.resume_agent(agent_id, model()).unwrap();
    let e = agent
        .send_text("hi")
        .err()
        .expect("the dead host's run holds the agent");
    assert_eq!(e.kind, ErrorKind::StaleRun, "{e}");
    assert_eq!(e.run_id(), Some(run_id), "{e}");
    agent.set_reclaim_stale_runs(true);
    let run = agent.send_text("hi").expect("reclaimed");
    assert_ne!(run.id(), run_id);
    finish(run);
}
