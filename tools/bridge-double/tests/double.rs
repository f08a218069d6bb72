//! The double on its own: CLI, auth, routing, RPC errors, every scenario's exact event sequence in both codecs.

mod common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const CODECS: [&str; 2] = ["json", "proto"];

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn send(b: &Bridge, codec: &str, agent: &str, text: &str, opts: Value) -> (Vec<String>, Vec<(u8, Vec<u8>)>) {
    b.stream_shapes(
        "SdkAgentService/Send",
        codec,
        json!({"agentId": agent, "message": {"text": text}, "options": opts}),
    )
}

fn model_agent(b: &Bridge) -> String {
    b.create_agent(json!({"model": {"id": "composer-2"}}))
}

const NORMAL: [&str; 14] = [
    "system@1",
    "status:RUNNING@2",
    "thinking@3",
    "assistant@4",
    "assistant@5",
    "assistant@6",
    "assistant@7",
    "assistant@8",
    "tool_call:running@9",
    "tool_call:completed@10",
    "usage@11",
    "status:FINISHED@12",
    "result:FINISHED@13",
    "done@14",
];

#[test]
fn ready_line_token_and_cli() {
    let b = Bridge::double(&[], &[]);
    let r = &b.ready;
    assert_eq!(r["schemaVersion"], 1);
    assert_eq!(r["transport"], "tcp");
    assert_eq!(r["protocol"], "connect");
    assert_eq!(r["serverVersion"], "1.0.0-double");
    assert_eq!(r["url"], format!("http://127.0.0.1:{}", b.port));
    assert_eq!(r["workspaceRef"], b.ws());
    let f = r["authTokenFile"].as_str().unwrap();
    let raw = std::fs::read_to_string(f).unwrap();
    assert_eq!(raw.len(), 43);
    assert!(!raw.ends_with('\n'));
    assert_eq!(std::fs::metadata(f).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&b.token_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert!(b.token_dir.contains("cursor-sdk-bridge-"));

    let out = std::process::Command::new(DOUBLE).arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cursor-sdk-bridge failed: Error: Unknown argument: --bogus"));
    let out = std::process::Command::new(DOUBLE)
        .args(["--host", "0.0.0.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = std::process::Command::new(DOUBLE).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--tool-callback-url"));
}

#[test]
fn sigterm_exits_zero_promptly() {
    let mut b = Bridge::double(&[], &[]);
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(b.pid, libc::SIGTERM) };
    let st = b.child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn auth_and_routing() {
    let b = Bridge::double(&[], &[]);
    for auth in [Some("Bearer wrong"), Some("bearer x"), Some("")] {
        let (st, ct, body) = b.unary("SdkBridgeControlService/Ping", "application/json", b"{}", auth);
        assert_eq!((st, ct.as_str()), (401, "application/json"));
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap(),
            json!({"code":"unauthenticated","message":"Unauthorized"})
        );
    }
    for codec in CODECS {
        let (st, ct, fr) = b.stream("SdkAgentService/ObserveRun", codec, b"{}", Some("Bearer nope"));
        assert_eq!(st, 200);
        assert_eq!(ct, format!("application/connect+{codec}"));
        assert_eq!(fr.len(), 1);
        assert_eq!(fr[0].0, 2);
        assert_eq!(
            serde_json::from_slice::<Value>(&fr[0].1).unwrap(),
            json!({"error":{"code":"unauthenticated","message":"Unauthorized"}})
        );
    }
    // routing before auth
    let (st, _, body) = raw_post(b.port, "/sdk.v1.SdkAgentService/Nope", "application/json", b"{}", None);
    assert_eq!((st, body.len()), (404, 0));
    let (st, _, body) = raw_post(
        b.port,
        "/sdk.v1.SdkBridgeControlService/Ping",
        "text/plain",
        b"{}",
        None,
    );
    assert_eq!((st, body.len()), (415, 0));
    let (st, _, _) = raw_post(b.port, "/sdk.v1.SdkAgentService/Send", "application/json", b"{}", None);
    assert_eq!(st, 415);
    let (st, _, _) = raw_request(
        b.port,
        b"GET /sdk.v1.SdkBridgeControlService/Ping?encoding=json&message=%7B%7D HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 405);
    // chunked request body
    let raw = format!(
        "POST /sdk.v1.SdkBridgeControlService/Ping HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nauthorization: Bearer {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n",
        b.token
    );
    let (st, _, body) = raw_request(b.port, raw.as_bytes());
    assert_eq!((st, body), (200, br#"{"message":"pong"}"#.to_vec()));
    // proto ping: empty body, 200, hex 0a04706f6e67
    let (st, ct, body) = b.unary("SdkBridgeControlService/Ping", "application/proto", b"", None);
    assert_eq!(
        (st, ct.as_str(), body),
        (200, "application/proto", vec![0x0a, 4, b'p', b'o', b'n', b'g'])
    );
    // malformed JSON
    let (st, v) = {
        let (s, _, body) = b.unary("SdkBridgeControlService/Ping", "application/json", b"{not json", None);
        (s, serde_json::from_slice::<Value>(&body).unwrap())
    };
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_argument")));
}

#[test]
fn control_and_catalog() {
    let b = Bridge::double(&[], &[]);
    let (st, v) = b.json("SdkBridgeControlService/GetVersion", json!({}));
    assert_eq!(st, 200);
    assert_eq!(v["protocolVersion"], "sdk.v1");
    assert_eq!(v["capabilities"].as_array().unwrap().len(), 10);
    let (st, v) = b.json(
        "SdkBridgeControlService/SetToolCallback",
        json!({"url": "http://127.0.0.1:9/"}),
    );
    assert_eq!(
        (st, v["message"].as_str()),
        (400, Some("SetToolCallback requires an auth_token when url is set."))
    );
    assert_eq!(b.json("SdkBridgeControlService/SetToolCallback", json!({})).0, 200);
    for m in ["Me", "ListModels", "ListRepositories"] {
        let (st, v) = b.json(&format!("SdkCursorService/{m}"), json!({}));
        assert_eq!(
            (st, v["message"].as_str()),
            (401, Some("API key is required for cloud catalog calls."))
        );
        let (st, _) = b.json(&format!("SdkCursorService/{m}"), json!({"options": {"apiKey": "k"}}));
        assert_eq!(st, 200);
    }
}

fn err(b: &Bridge, m: &str, body: Value) -> (u16, String, String, bool) {
    let (st, v) = b.json(m, body);
    (
        st,
        v["code"].as_str().unwrap_or("").into(),
        v["message"].as_str().unwrap_or("").into(),
        v.get("details").is_some(),
    )
}

#[test]
fn unknown_ids_like_the_real_bridge() {
    let b = Bridge::double(&[], &[]);
    let a = json!({"agentId": "agent-00000000-0000-0000-0000-000000000000"});
    let r = json!({"runId": "run-00000000-0000-0000-0000-000000000000"});
    for m in ["GetAgent", "ListRuns", "ResumeAgent"] {
        let (st, code, _, det) = err(&b, &format!("SdkAgentService/{m}"), a.clone());
        assert_eq!((st, code.as_str(), det), (404, "not_found", true), "{m}");
    }
    for m in ["ArchiveAgent", "UnarchiveAgent", "DeleteAgent"] {
        let (st, code, msg, _) = err(&b, &format!("SdkAgentService/{m}"), a.clone());
        assert_eq!((st, code.as_str()), (500, "internal"), "{m}");
        assert!(msg.starts_with("Agent agent-0000"), "{msg}");
    }
    for m in ["CloseAgent", "ReloadAgent", "ListArtifacts", "GetUsage"] {
        let (st, code, msg, det) = err(&b, &format!("SdkAgentService/{m}"), a.clone());
        assert_eq!((st, code.as_str(), det), (404, "not_found", false), "{m}");
        assert!(msg.starts_with("Unknown agent: "));
    }
    for m in ["WaitLiveRun", "GetRunConversation"] {
        let (st, _, msg, det) = err(&b, &format!("SdkAgentService/{m}"), r.clone());
        assert_eq!((st, det), (404, false));
        assert!(msg.starts_with("Unknown run: "));
    }
    for m in ["GetRun", "CancelRun"] {
        let (st, code, msg, _) = err(&b, &format!("SdkAgentService/{m}"), r.clone());
        assert_eq!((st, code.as_str()), (400, "invalid_argument"));
        assert!(msg.ends_with(" not found"));
    }
    assert_eq!(b.json("SdkAgentService/ListAgentMessages", a.clone()), (200, json!({})));
    for codec in CODECS {
        let (sh, _) = b.stream_shapes("SdkAgentService/ObserveRun", codec, r.clone());
        assert_eq!(sh, s(&["end:error:invalid_argument"]));
        let (sh, _) = send(&b, codec, "agent-00000000-0000-0000-0000-000000000000", "hi", json!({}));
        assert_eq!(sh, s(&["end:error:not_found"]));
    }
    // local agent without a model
    let id = b.create_agent(json!({}));
    let (sh, fr) = send(&b, "json", &id, "hi", json!({}));
    assert_eq!(sh, s(&["end:error:invalid_argument"]));
    assert!(String::from_utf8_lossy(&fr[0].1).contains("Local SDK agents require an explicit `model`"));
}

#[test]
fn normal_scenario_both_codecs_and_observe_numbering() {
    let b = Bridge::double(&[], &[]);
    for codec in CODECS {
        let id = model_agent(&b);
        let (sh, fr) = send(&b, codec, &id, "hello", json!({}));
        let mut want = s(&NORMAL);
        want.push("end".into());
        assert_eq!(sh, want, "{codec}");
        let result = frame_json(codec, 0, &fr[12].1);
        assert_eq!(result["result"]["result"]["result"], "Hello from the bridge double.");
        assert!(result["result"]["result"]["git"]["branches"][0]["branch"]
            .as_str()
            .unwrap()
            .starts_with("double/"));
        assert_eq!(result["result"]["result"]["usage"]["inputTokens"], "120");
        let run_id = result["result"]["runId"].as_str().unwrap().to_string();
        // ObserveRun: request at 1, then Send offsets + 1
        let (obs, _) = b.stream_shapes("SdkAgentService/ObserveRun", codec, json!({"runId": run_id}));
        let mut want: Vec<String> = vec!["request@1".into()];
        for x in NORMAL {
            let (n, o) = x.split_once('@').unwrap();
            want.push(format!("{n}@{}", o.parse::<u32>().unwrap() + 1));
        }
        want.push("end".into());
        assert_eq!(obs, want);
        let (obs, _) = b.stream_shapes(
            "SdkAgentService/ObserveRun",
            codec,
            json!({"runId": run_id, "afterOffset": "12"}),
        );
        assert_eq!(obs, s(&["status:FINISHED@13", "result:FINISHED@14", "done@15", "end"]));
        // WaitLiveRun / GetRun / conversation after the end
        let (st, v) = b.json("SdkAgentService/WaitLiveRun", json!({"runId": run_id}));
        assert_eq!(
            (st, v["result"]["status"].as_str()),
            (200, Some("RUN_LIFECYCLE_STATUS_FINISHED"))
        );
        let (st, v) = b.json("SdkAgentService/GetRun", json!({"runId": run_id}));
        assert_eq!(
            (st, v["run"]["status"].as_str()),
            (200, Some("RUN_LIFECYCLE_STATUS_FINISHED"))
        );
        let (st, v) = b.json("SdkAgentService/GetRunConversation", json!({"runId": run_id}));
        assert_eq!(st, 200);
        assert!(v["conversationJson"]
            .as_str()
            .unwrap()
            .contains("Hello from the bridge double."));
        // CancelRun on a terminal run: no-op
        assert_eq!(
            b.json("SdkAgentService/CancelRun", json!({"runId": run_id})),
            (200, json!({}))
        );
    }
}

#[test]
fn deltas_and_steps_count_in_send_offsets() {
    let b = Bridge::double(&[], &[]);
    let id = model_agent(&b);
    let (sh, _) = send(
        &b,
        "json",
        &id,
        "hi",
        json!({"enableDeltas": true, "enableSteps": true}),
    );
    let want = s(&[
        "system@1",
        "status:RUNNING@2",
        "delta:thinking-delta@3",
        "thinking@4",
        "delta:thinking-completed@5",
        "step:thinkingMessage@6",
        "delta:text-delta@7",
        "assistant@8",
        "delta:text-delta@9",
        "assistant@10",
        "delta:text-delta@11",
        "assistant@12",
        "delta:text-delta@13",
        "assistant@14",
        "delta:text-delta@15",
        "assistant@16",
        "step:assistantMessage@17",
        "delta:tool-call-started@18",
        "tool_call:running@19",
        "tool_call:completed@20",
        "delta:tool-call-completed@21",
        "step:toolCall@22",
        "delta:turn-ended@23",
        "usage@24",
        "status:FINISHED@25",
        "result:FINISHED@26",
        "done@27",
        "end",
    ]);
    assert_eq!(sh, want);
}

#[test]
fn fail_offline_unknown_big_long_scenarios() {
    let b = Bridge::double(&[], &[("CURSOR_SDK_DOUBLE_OFFLINE_MS", "100")]);
    for codec in CODECS {
        let id = model_agent(&b);
        let (sh, fr) = send(&b, codec, &id, "scenario:fail", json!({}));
        assert_eq!(
            sh,
            s(&["status:RUNNING@1", "status:ERROR@2", "result:ERROR@3", "done@4", "end"])
        );
        let r = frame_json(codec, 0, &fr[2].1);
        assert!(r["result"].get("errorCode").is_none() && r["result"]["result"].get("errorCode").is_none());

        let id = model_agent(&b);
        let (sh, fr) = send(&b, codec, &id, "scenario:offline", json!({}));
        assert_eq!(
            sh,
            s(&[
                "status:RUNNING@1",
                "keepalive",
                "status:ERROR@2",
                "result:ERROR@3",
                "done@4",
                "end"
            ])
        );
        if codec == "proto" {
            assert!(fr[1].1.is_empty(), "proto keepalive is a 0-length frame");
        } else {
            assert_eq!(fr[1].1, b"{}");
        }
        let st = frame_json(codec, 0, &fr[2].1);
        assert_eq!(
            st["sdkMessage"]["message"]["message"],
            "[unknown] Failed to connect to API key exchange endpoint: fetch failed"
        );
        let run_id = st["sdkMessage"]["message"]["run_id"].as_str().unwrap().to_string();
        let (_, v) = b.json("SdkAgentService/WaitLiveRun", json!({"runId": run_id}));
        assert_eq!(v["result"]["errorCode"], "unknown");
        assert_eq!(
            v["result"]["errorMessage"],
            "Failed to connect to API key exchange endpoint: fetch failed"
        );

        let id = model_agent(&b);
        let (sh, _) = send(&b, codec, &id, "scenario:unknown", json!({}));
        assert_eq!(
            sh,
            s(&[
                "system@1",
                "status:RUNNING@2",
                "assistant@3",
                "unknown-envelope@4",
                "future_type@5",
                "assistant@6",
                "usage@7",
                "status:FINISHED@8",
                "result:FINISHED@9",
                "done@10",
                "end"
            ])
        );

        let id = model_agent(&b);
        let (sh, fr) = send(&b, codec, &id, "scenario:big:4000000", json!({}));
        assert_eq!(strip_offsets(&sh)[2], "assistant");
        assert!(fr[2].1.len() > 4_000_000 && fr[2].1.len() < 4_001_000);

        let id = model_agent(&b);
        let n = 100_000;
        let msg = encode_req(
            "SdkAgentService/Send",
            codec,
            &json!({"agentId": id, "message": {"text": format!("scenario:long:{n}")}}),
        );
        let t = Instant::now();
        let (_, _, fr) = b.stream("SdkAgentService/Send", codec, &msg, None);
        let rate = n as f64 / t.elapsed().as_secs_f64();
        eprintln!("long:{n} {codec}: {rate:.0} events/s");
        let sh: Vec<String> = fr.iter().map(|(f, p)| shape(codec, *f, p)).collect();
        assert_eq!(sh.len(), n + 2 + 4 + 1);
        assert_eq!(sh[n + 1], format!("assistant@{}", n + 2));
        // the double is built in debug for `cargo test`; a release build does several 100k events/s
        assert!(
            rate > if cfg!(debug_assertions) { 20_000.0 } else { 100_000.0 },
            "{rate}"
        );
    }
}

#[test]
fn cancel_busy_drop_resume_and_keepalive() {
    let b = Bridge::double(&[], &[("CURSOR_SDK_DOUBLE_KEEPALIVE_MS", "200")]);
    for codec in CODECS {
        // cancel a slow run
        let id = model_agent(&b);
        let b2_port = b.port;
        let tok = b.token.clone();
        let msg = encode_req(
            "SdkAgentService/Send",
            codec,
            &json!({"agentId": id, "message": {"text": "scenario:slow:50"}}),
        );
        let h = std::thread::spawn(move || {
            let mut body = vec![0u8];
            body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            body.extend_from_slice(&msg);
            let ct = format!("application/connect+{codec}");
            let (_, _, b) = raw_post(
                b2_port,
                "/sdk.v1.SdkAgentService/Send",
                &ct,
                &body,
                Some(&format!("Bearer {tok}")),
            );
            (frames(&b), Instant::now())
        });
        std::thread::sleep(Duration::from_millis(300));
        // second Send while active: internal "already has active run"
        let (sh, fr) = send(&b, codec, &id, "hi", json!({}));
        assert_eq!(sh, s(&["end:error:internal"]));
        assert!(String::from_utf8_lossy(&fr[0].1).contains("already has active run"));
        let (_, v) = b.json("SdkAgentService/ListRuns", json!({"agentId": id}));
        let run_id = v["items"][0]["runId"].as_str().unwrap().to_string();
        let t = Instant::now();
        assert_eq!(b.json("SdkAgentService/CancelRun", json!({"runId": run_id})).0, 200);
        let (fr, ended) = h.join().unwrap();
        assert!(ended.duration_since(t) < Duration::from_millis(500));
        let sh: Vec<String> = strip_offsets(&fr.iter().map(|(f, p)| shape(codec, *f, p)).collect::<Vec<_>>());
        assert_eq!(
            &sh[sh.len() - 4..],
            &s(&["status:CANCELLED", "result:CANCELLED", "done", "end"])[..]
        );

        // drop: connection closed after 3 events, the run goes on; ObserveRun resumes
        let id = model_agent(&b);
        let (sh, _) = send(&b, codec, &id, "scenario:drop:3", json!({}));
        assert_eq!(
            sh,
            s(&["system@1", "status:RUNNING@2", "thinking@3"]),
            "no end frame after a drop"
        );
        let (_, v) = b.json("SdkAgentService/ListRuns", json!({"agentId": id}));
        let run_id = v["items"][0]["runId"].as_str().unwrap().to_string();
        let (obs, _) = b.stream_shapes(
            "SdkAgentService/ObserveRun",
            codec,
            json!({"runId": run_id, "afterOffset": "4"}),
        );
        let want: Vec<String> = NORMAL[3..]
            .iter()
            .map(|x| {
                let (n, o) = x.split_once('@').unwrap();
                format!("{n}@{}", o.parse::<u32>().unwrap() + 1)
            })
            .chain(["end".to_string()])
            .collect();
        assert_eq!(obs, want);

        // keepalive:2 with a 200 ms interval
        let id = model_agent(&b);
        let (sh, fr) = send(&b, codec, &id, "scenario:keepalive:2", json!({}));
        assert_eq!(
            sh,
            s(&[
                "status:RUNNING@1",
                "keepalive",
                "keepalive",
                "assistant@2",
                "usage@3",
                "status:FINISHED@4",
                "result:FINISHED@5",
                "done@6",
                "end"
            ])
        );
        assert_eq!(fr[1].1.len(), if codec == "json" { 2 } else { 0 });
    }
}

#[test]
fn die_exits_with_code_3() {
    let mut b = Bridge::double(&[], &[]);
    let id = model_agent(&b);
    let (sh, _) = send(&b, "json", &id, "scenario:die:2", json!({}));
    assert_eq!(sh, s(&["system@1", "status:RUNNING@2"]));
    assert_eq!(b.child.wait().unwrap().code(), Some(3));
}

#[test]
fn agent_management_and_cwd_scoping() {
    let b = Bridge::double(&[], &[]);
    let other = tempdir::TempDir::new("cwd");
    let a1 = b.create_agent(json!({"model": {"id": "composer-2"}}));
    let a2 = b.create_agent(json!({"model": {"id": "composer-2"}}));
    let a3 = b.create_agent(json!({"model": {"id": "composer-2"}}));
    let ax = b.create_agent(json!({"local": {"cwd": [other.0]}}));
    assert_eq!(b.json("SdkAgentService/GetAgent", json!({"agentId": ax})).0, 404);
    let (st, v) = b.json(
        "SdkAgentService/GetAgent",
        json!({"agentId": ax, "options": {"cwd": other.0}}),
    );
    assert_eq!((st, v["agent"]["local"]["cwd"].as_str()), (200, Some(other.0.as_str())));
    assert_eq!(v["agent"]["status"], "AGENT_INFO_STATUS_FINISHED");
    // paging
    let (_, p1) = b.json("SdkAgentService/ListAgents", json!({"options": {"limit": 2}}));
    assert_eq!(p1["items"].as_array().unwrap().len(), 2);
    let cur = p1["nextCursor"].as_str().unwrap();
    let (_, p2) = b.json(
        "SdkAgentService/ListAgents",
        json!({"options": {"limit": 2, "cursor": cur}}),
    );
    assert_eq!(p2["items"].as_array().unwrap().len(), 1);
    assert!(p2.get("nextCursor").is_none());
    let mut all: Vec<String> = p1["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(p2["items"].as_array().unwrap())
        .map(|a| a["agentId"].as_str().unwrap().to_string())
        .collect();
    all.sort();
    let mut want = vec![a1.clone(), a2.clone(), a3.clone()];
    want.sort();
    assert_eq!(all, want);
    assert_eq!(
        b.json("SdkAgentService/ListAgents", json!({"options": {"cursor": "%%%"}}))
            .0,
        500
    );
    // pre-created queued run shows as RUNNING; WaitLiveRun on it is 500
    let (_, v) = b.json("SdkAgentService/ListRuns", json!({"agentId": a1}));
    assert_eq!(v["items"][0]["status"], "RUN_LIFECYCLE_STATUS_RUNNING");
    let q = v["items"][0]["runId"].as_str().unwrap();
    assert_eq!(b.json("SdkAgentService/WaitLiveRun", json!({"runId": q})).0, 500);
    // archive / unarchive / send to archived / delete
    assert_eq!(
        b.json("SdkAgentService/ArchiveAgent", json!({"agentId": a1})),
        (200, json!({}))
    );
    let (_, v) = b.json("SdkAgentService/GetAgent", json!({"agentId": a1}));
    assert_eq!(v["agent"]["archived"], true);
    assert!(v["agent"].get("status").is_none());
    let (sh, _) = send(&b, "json", &a1, "hi", json!({}));
    assert_eq!(sh, s(&["end:error:internal"]));
    assert_eq!(b.json("SdkAgentService/UnarchiveAgent", json!({"agentId": a1})).0, 200);
    let (sh, _) = send(&b, "json", &a1, "hi", json!({}));
    assert_eq!(sh.last().unwrap(), "end");
    let (_, v) = b.json("SdkAgentService/ListAgentMessages", json!({"agentId": a1}));
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    let (_, v) = b.json("SdkAgentService/GetUsage", json!({"agentId": a1}));
    assert_eq!(v["usage"]["usage"]["inputTokens"], "120");
    // artifacts
    let (_, v) = b.json("SdkAgentService/ListArtifacts", json!({"agentId": a1}));
    let path = v["artifacts"][0]["path"].as_str().unwrap().to_string();
    let size: usize = v["artifacts"][0]["sizeBytes"].as_str().unwrap().parse().unwrap();
    for codec in CODECS {
        let msg = encode_req(
            "SdkAgentService/DownloadArtifact",
            codec,
            &json!({"agentId": a1, "path": path}),
        );
        let (_, _, fr) = b.stream("SdkAgentService/DownloadArtifact", codec, &msg, None);
        assert!(fr.len() > 2);
        let mut total = 0;
        for (f, p) in &fr[..fr.len() - 1] {
            assert_eq!(*f, 0);
            total += if codec == "json" {
                use base64::Engine;
                let v: Value = serde_json::from_slice(p).unwrap();
                base64::engine::general_purpose::STANDARD
                    .decode(v["data"].as_str().unwrap())
                    .unwrap()
                    .len()
            } else {
                use prost::Message;
                proto::DownloadArtifactChunk::decode(&p[..]).unwrap().data.len()
            };
        }
        assert_eq!(total, size);
    }
    assert_eq!(
        b.json("SdkAgentService/DeleteAgent", json!({"agentId": a2})),
        (200, json!({}))
    );
    assert_eq!(b.json("SdkAgentService/DeleteAgent", json!({"agentId": a2})).0, 500);
    assert_eq!(b.json("SdkAgentService/CloseAgent", json!({"agentId": a3})).0, 200);
    assert_eq!(b.json("SdkAgentService/CloseAgent", json!({"agentId": a3})).0, 404);
    assert_eq!(b.json("SdkAgentService/ReloadAgent", json!({"agentId": a3})).0, 404);
}
