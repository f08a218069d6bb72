//! Custom tools end to end against the bridge double (the only bridge that can call a tool
//! here: the real one needs a model turn).

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Sandbox;
use cursor_sdk::{proto, Client, ErrorKind, Event, RunStatus, Tool, ToolCall, ToolCompletion, ToolHandler};
use serde_json::{json, Value};

fn local_agent(client: &Client) -> cursor_sdk::Agent {
    client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

/// The `tool_call` events that are not `running`, in order.
fn tool_results(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.r#type() == "tool_call" && e.payload()["status"] != "running")
        .map(|e| e.payload().clone())
        .collect()
}

fn run_events(agent: &cursor_sdk::Agent, text: &str) -> (Vec<Event>, cursor_sdk::RunResult) {
    let run = agent.send_text(text).unwrap();
    let events: Vec<Event> = run.events().map(|e| e.unwrap()).collect();
    (events, run.wait().unwrap())
}

#[test]
fn a_tool_round_trips_and_the_run_continues_with_its_result() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let seen = Arc::new(Mutex::new(Vec::<ToolCall>::new()));
    let s2 = seen.clone();
    client
        .add_tool(Tool::new(
            "echo",
            "Echo the input back",
            json!({"type":"object","properties":{"input":{"type":"string"}}}),
            move |call| {
                s2.lock().unwrap().push(call.clone());
                Ok(json!({"echoed": call.args["input"]}))
            },
        ))
        .unwrap();
    let agent = local_agent(&client);
    let (events, result) = run_events(&agent, "scenario:tool:echo");
    assert_eq!(result.status, RunStatus::Finished);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(results[0]["result"]["value"]["echoed"], "hello from the double #1");
    assert!(
        result.text.contains("echoed"),
        "the run continued with the result: {}",
        result.text
    );
    let calls = seen.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool_name, "echo");
    assert_eq!(calls[0].agent_id, agent.id());
    assert_eq!(calls[0].tool_call_id.as_deref(), Some("call-double-1"));
}

#[test]
fn scalars_are_wrapped_and_handler_errors_reach_the_model() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    client
        .add_tool(Tool::new("text", "", Value::Null, |_| Ok(json!("plain words"))))
        .unwrap();
    client
        .add_tool(Tool::new("number", "", Value::Null, |_| Ok(json!(42))))
        .unwrap();
    client
        .add_tool(Tool::new("broken", "", Value::Null, |_| Err("the disk is full".into())))
        .unwrap();
    let agent = local_agent(&client);
    let value = |tool: &str| {
        let (events, result) = run_events(&agent, &format!("scenario:tool:{tool}"));
        assert_eq!(
            result.status,
            RunStatus::Finished,
            "{tool}: a tool failure must not kill the run"
        );
        tool_results(&events)[0]["result"]["value"].clone()
    };
    assert_eq!(value("text"), json!({"content":[{"type":"text","text":"plain words"}]}));
    assert_eq!(value("number"), json!({"content":[{"type":"text","text":"42"}]}));
    let broken = value("broken");
    assert_eq!(broken["isError"], true);
    assert_eq!(broken["content"][0]["text"], "the disk is full");
}

/// Completes each call later, from another thread.
struct Later(Arc<AtomicUsize>);
impl ToolHandler for Later {
    fn call(&self, call: ToolCall, done: ToolCompletion) {
        let n = self.0.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            n.fetch_add(1, Ordering::SeqCst);
            done.complete(Ok(json!({"late": call.args["i"]}))).unwrap();
            let again = done.complete(Ok(json!("twice")));
            assert_eq!(
                again.unwrap_err().kind,
                ErrorKind::Usage,
                "a second completion is an error"
            );
        });
    }
}

#[test]
fn late_completion_from_another_thread_and_50_concurrent_calls() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let done = Arc::new(AtomicUsize::new(0));
    let agent = client
        .create_agent_with_tools(
            cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap(),
            vec![Tool::with_handler(
                "slow",
                "answers later",
                Value::Null,
                Arc::new(Later(done.clone())),
            )],
        )
        .unwrap();
    let t0 = Instant::now();
    let (events, result) = run_events(&agent, "scenario:tools:50");
    let took = t0.elapsed();
    assert_eq!(result.status, RunStatus::Finished);
    let results = tool_results(&events);
    assert_eq!(results.len(), 50);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["status"], "completed", "{r}");
        assert_eq!(
            r["result"]["value"]["late"].as_f64(),
            Some(i as f64 + 1.0),
            "Struct numbers are doubles"
        );
    }
    assert_eq!(done.load(Ordering::SeqCst), 50);
    assert!(took < Duration::from_millis(50 * 50), "calls ran one by one: {took:?}");
}

#[test]
fn a_forgotten_call_times_out_with_an_error_result() {
    struct Forget;
    impl ToolHandler for Forget {
        fn call(&self, _call: ToolCall, done: ToolCompletion) {
            std::mem::forget(done);
        }
    }
    let sb = Sandbox::new();
    let mut o = sb.double_options();
    o.tool_timeout_ms = Some(200);
    let client = Client::new(o).unwrap();
    client
        .add_tool(Tool::with_handler("forgetful", "", Value::Null, Arc::new(Forget)))
        .unwrap();
    let agent = local_agent(&client);
    let (events, result) = run_events(&agent, "scenario:tool:forgetful");
    assert_eq!(result.status, RunStatus::Finished);
    let v = &tool_results(&events)[0]["result"]["value"];
    assert_eq!(v["isError"], true);
    assert!(
        v["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not answer within 200 ms"),
        "{v}"
    );
}

#[test]
fn tools_are_refused_where_they_would_be_lost() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    client
        .add_tool(Tool::new("t", "", Value::Null, |_| Ok(json!(1))))
        .unwrap();
    let cloud = client.create_agent_json(Some(
        r#"{"model":"composer-2","cloud":{"repos":[{"url":"https://github.com/a/b"}]}}"#,
    ));
    let e = cloud.err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("local agents only"), "{e}");
    let e = client
        .create_agent_json(Some(r#"{"model":"composer-2","disallowedTools":["mcp"]}"#))
        .err()
        .unwrap();
    assert!(e.message.contains("mcp"), "{e}");
    assert!(client
        .add_tool(Tool::new("bad name!", "", Value::Null, |_| Ok(json!(1))))
        .is_err());
}

#[test]
fn callback_requests_without_the_token_never_reach_the_handler() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    client
        .add_tool(Tool::new("count", "", Value::Null, move |_| {
            c2.fetch_add(1, Ordering::SeqCst);
            Ok(json!("ok"))
        }))
        .unwrap();
    let agent = local_agent(&client);
    // The bridge learned the URL through SetToolCallback; a normal call proves it works.
    run_events(&agent, "scenario:tool:count");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let url = client.tool_callback_url().unwrap();
    let body = json!({"toolName":"count","agentId":agent.id(),"args":{}}).to_string();
    let call = |token: &str| {
        let out = Command::new(common::double_bin())
            .args([
                "call",
                "--url",
                &url,
                "--token",
                token,
                "--service",
                "tool",
                "--json",
                &body,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for token in ["", "wrong", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
        let out = call(token);
        assert!(out.starts_with("401"), "{out}");
    }
    // A raw, malformed request is refused too (the double writes it verbatim).
    let raw = sb.path().join("raw.http");
    std::fs::write(
        &raw,
        "POST /sdk.v1.SdkCustomToolCallbackService/CallCustomTool HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    )
    .unwrap();
    let out = Command::new(common::double_bin())
        .args([
            "call",
            "--url",
            &url,
            "--token",
            "x",
            "--service",
            "tool",
            "--raw-request",
            raw.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.starts_with("400") || out.starts_with("401"), "{out}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the handler ran for a rejected request"
    );
}

#[test]
fn resumed_agents_get_their_tools_declared_again() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    client
        .add_tool(Tool::new("echo", "", Value::Null, |c| Ok(c.args.clone())))
        .unwrap();
    let agent = local_agent(&client);
    agent.close().unwrap();
    let opts = proto::AgentOptions {
        model: Some(proto::ModelSelection {
            id: "composer-2".into(),
            params: vec![],
        }),
        ..Default::default()
    };
    let again = client.resume_agent(agent.id(), opts).unwrap();
    let (events, _) = run_events(&again, "scenario:tool:echo");
    assert_eq!(tool_results(&events)[0]["status"], "completed");
}
