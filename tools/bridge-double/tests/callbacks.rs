//! Host callbacks: custom tools (`tool:<name>`, `tools:<n>`, errors), the custom store, and the `call` subcommand.

mod common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<(String, Value)>>>;

/// A tiny Connect callback server: records (path, body); `reply` makes the answer.
fn server(reply: fn(&str, &Value) -> (u16, Value)) -> (String, Log) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/", l.local_addr().unwrap().port());
    let log: Log = Default::default();
    let log2 = log.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { break };
            let log = log2.clone();
            std::thread::spawn(move || {
                c.set_nodelay(true).unwrap();
                let mut w = c.try_clone().unwrap();
                let mut r = BufReader::new(c);
                // parse with the double's own rules: chunked request body, bearer token
                let (path, auth, body) = read_req(&mut r);
                assert_eq!(auth, "Bearer cb-token");
                let v: Value = serde_json::from_slice(&body).unwrap();
                log.lock().unwrap().push((path.clone(), v.clone()));
                let (st, out) = reply(&path, &v);
                let out = out.to_string();
                write!(
                    w,
                    "HTTP/1.1 {st} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{out}",
                    out.len()
                )
                .unwrap();
            });
        }
    });
    (url, log)
}

fn read_req(r: &mut BufReader<std::net::TcpStream>) -> (String, String, Vec<u8>) {
    use std::io::{BufRead, Read};
    let mut first = String::new();
    r.read_line(&mut first).unwrap();
    let path = first.split(' ').nth(1).unwrap().to_string();
    let (mut auth, mut chunked, mut cl) = (String::new(), false, 0usize);
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "authorization" => auth = v.trim().into(),
            "transfer-encoding" => chunked = v.contains("chunked"),
            "content-length" => cl = v.trim().parse().unwrap(),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        chunked_transfer::Decoder::new(r).read_to_end(&mut body).unwrap();
    } else {
        body.resize(cl, 0);
        r.read_exact(&mut body).unwrap();
    }
    (path, auth, body)
}

fn tool_reply(_: &str, v: &Value) -> (u16, Value) {
    if v["args"]["i"] == 2 {
        return (500, json!({"code": "internal", "message": "tool exploded"}));
    }
    (
        200,
        json!({"result": {"echo": v["args"]["input"], "tool": v["toolName"]}}),
    )
}

#[test]
fn custom_tools_through_the_callback() {
    let (url, log) = server(tool_reply);
    let b = Bridge::double(
        &["--tool-callback-url", &url, "--tool-callback-auth-token", "cb-token"],
        &[],
    );
    let id = b.create_agent(json!({"model": {"id": "composer-2"},
        "local": {"customTools": {"echo": {"description": "Echo", "inputSchema": {"type": "object"}}}}}));
    assert!(!id.starts_with("agent-"), "custom-tool agents get a bare UUID");
    let (sh, fr) = b.stream_shapes(
        "SdkAgentService/Send",
        "json",
        json!({"agentId": id, "message": {"text": "scenario:tools:3"}}),
    );
    let want = [
        "system@1",
        "status:RUNNING@2",
        "tool_call:running@3",
        "tool_call:running@4",
        "tool_call:running@5",
        "tool_call:completed@6",
        "tool_call:error@7",
        "tool_call:completed@8",
        "assistant@9",
        "usage@10",
        "status:FINISHED@11",
        "result:FINISHED@12",
        "done@13",
        "end",
    ];
    assert_eq!(sh, want);
    let calls = log.lock().unwrap().clone();
    assert_eq!(calls.len(), 3);
    for (p, v) in &calls {
        assert_eq!(p, "/sdk.v1.SdkCustomToolCallbackService/CallCustomTool");
        assert_eq!(v["toolName"], "echo");
        assert_eq!(v["agentId"], id.as_str());
        assert!(v["toolCallId"].as_str().unwrap().starts_with("call-double-"));
    }
    let err = frame_json("json", 0, &fr[6].1);
    assert!(err["sdkMessage"]["message"]["result"]["error"]
        .as_str()
        .unwrap()
        .contains("tool exploded"));
    let text = frame_json("json", 0, &fr[8].1);
    assert!(text.to_string().contains("hello from the double #1"));

    // without a tool callback: CreateAgent with tools fails like the real bridge
    let b2 = Bridge::double(&[], &[]);
    let (st, v) = b2.json(
        "SdkAgentService/CreateAgent",
        json!({"options": {"model": {"id": "composer-2"}, "local": {"customTools": {"echo": {}}}}}),
    );
    assert_eq!((st, v["code"].as_str()), (400, Some("failed_precondition")));
}

#[test]
fn toolseq_times_sequential_calls() {
    // This host closes every connection after one answer without saying so: the double's
    // keep-alive client must notice and re-open (one connection per call).
    let (url, log) = server(|_, v| (200, json!({"result": {"i": v["args"]["i"]}})));
    let b = Bridge::double(
        &["--tool-callback-url", &url, "--tool-callback-auth-token", "cb-token"],
        &[],
    );
    let id = b.create_agent(json!({"model": {"id": "composer-2"},
        "local": {"customTools": {"bench": {"description": "Bench", "inputSchema": {"type": "object"}}}}}));
    let (sh, fr) = b.stream_shapes(
        "SdkAgentService/Send",
        "json",
        json!({"agentId": id, "message": {"text": "scenario:toolseq:5"}}),
    );
    assert_eq!(
        sh,
        [
            "system@1",
            "status:RUNNING@2",
            "assistant@3",
            "usage@4",
            "status:FINISHED@5",
            "result:FINISHED@6",
            "done@7",
            "end"
        ]
    );
    let text = frame_json("json", 0, &fr[2].1)["sdkMessage"]["message"]["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let report: Value = serde_json::from_str(text.strip_prefix("toolseq ").unwrap()).unwrap();
    assert_eq!((report["ok"].as_u64(), report["errors"].as_u64()), (Some(5), Some(0)));
    assert_eq!(report["ns"].as_array().unwrap().len(), 5);
    assert_eq!(report["connects"].as_u64(), Some(5));
    let calls = log.lock().unwrap().clone();
    let is: Vec<_> = calls.iter().map(|(_, v)| v["args"]["i"].as_u64().unwrap()).collect();
    assert_eq!(is, [1, 2, 3, 4, 5], "sequential, in order");
    assert!(calls.iter().all(|(_, v)| v["toolName"] == "bench"));
}

fn store_reply(_: &str, v: &Value) -> (u16, Value) {
    // a stateless host store: get finds nothing, list returns one canned record for the requested cwd
    match (v["substore"].as_str().unwrap(), v["method"].as_str().unwrap()) {
        ("agents", "get") => (200, json!({})),
        ("agents", "list") => (
            200,
            json!({"output": {"items": [{"agentId": "a-1", "cwd": v["input"]["filter"]["cwd"], "status": "idle",
                "name": "From host", "createdAt": 1, "updatedAt": 2}]}}),
        ),
        (_, "create") | (_, "update") => (200, json!({"output": v["input"].as_object().unwrap().values().next()})),
        _ => (200, json!({})),
    }
}

#[test]
fn custom_store_sequences() {
    let (url, log) = server(store_reply);
    let b = Bridge::double(
        &[
            "--local-store",
            r#"{"type":"custom"}"#,
            "--store-callback-url",
            &url,
            "--store-callback-auth-token",
            "cb-token",
        ],
        &[],
    );
    b.create_agent(json!({"model": {"id": "composer-2"}}));
    let seq = |log: &Log| -> Vec<String> {
        let mut l = log.lock().unwrap();
        let out = l
            .iter()
            .map(|(_, v)| format!("{}.{}", v["substore"].as_str().unwrap(), v["method"].as_str().unwrap()))
            .collect();
        l.clear();
        out
    };
    assert_eq!(
        seq(&log),
        [
            "agents.get",
            "agents.create",
            "runs.create",
            "agents.update",
            "agents.get"
        ]
    );
    let (st, v) = b.json("SdkAgentService/ListAgents", json!({}));
    assert_eq!((st, v["items"][0]["name"].as_str()), (200, Some("From host")));
    assert_eq!(seq(&log), ["agents.list"]);
    assert_eq!(log.lock().unwrap().len(), 0);
    assert_eq!(b.json("SdkAgentService/GetAgent", json!({"agentId": "a-1"})).0, 404);
    assert_eq!(seq(&log), ["agents.get"]);

    // the `call` subcommand
    let out = std::process::Command::new(DOUBLE)
        .args([
            "call",
            "--url",
            &url,
            "--token",
            "cb-token",
            "--service",
            "store",
            "--json",
        ])
        .arg(r#"{"substore":"agents","method":"list","input":{"filter":{"cwd":"/x"}}}"#)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("200 application/json\n"), "{stdout}");
    assert!(stdout.contains("From host"));
}
