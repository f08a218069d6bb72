//! Differential test: the same requests against the double and the REAL bridge; compare wire shapes.
//! The real bridge comes from `$CURSOR_SDK_BRIDGE_CACHE` (default `<workspace root>/.cache/bridge`).

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn real_bridge_bin() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cache = std::env::var("CURSOR_SDK_BRIDGE_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join(".cache/bridge"));
    let bin = cache.join("cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge");
    assert!(
        bin.exists(),
        "the real bridge is missing at {} (set CURSOR_SDK_BRIDGE_CACHE or run `make fetch-bridge`)",
        bin.display()
    );
    bin.to_string_lossy().into_owned()
}

const CATALOG: (&str, &str) = ("CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON", r#"[{"id":"composer-2"}]"#);

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

/// (status, content type, top-level JSON keys, code) of a unary call.
fn unary_shape(
    b: &Bridge,
    m: &str,
    ct: &str,
    body: &[u8],
    auth: Option<&str>,
) -> (u16, String, BTreeSet<String>, Value) {
    let (st, ct, body) = b.unary(m, ct, body, auth);
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (st, ct, keys(&v), v.get("code").cloned().unwrap_or(Value::Null))
}

#[test]
fn double_matches_real_bridge_shapes() {
    let real = Bridge::spawn(&real_bridge_bin(), &[], &[CATALOG]);
    let dbl = Bridge::double(&[], &[CATALOG, ("CURSOR_SDK_DOUBLE_OFFLINE_MS", "300")]);

    // ready line keys (the double may not add keys the real one lacks)
    let rk = keys(&real.ready);
    assert_eq!(rk, keys(&dbl.ready));

    // unary auth failure, Ping, GetVersion (both codecs)
    let cases: Vec<(&str, &str, Vec<u8>, Option<&str>)> = vec![
        (
            "SdkBridgeControlService/Ping",
            "application/json",
            b"{}".to_vec(),
            Some("Bearer wrong"),
        ),
        (
            "SdkBridgeControlService/Ping",
            "application/proto",
            vec![],
            Some("Bearer wrong"),
        ),
        ("SdkBridgeControlService/Ping", "application/json", b"{}".to_vec(), None),
        ("SdkBridgeControlService/Ping", "application/proto", vec![], None),
        (
            "SdkBridgeControlService/GetVersion",
            "application/json",
            b"{}".to_vec(),
            None,
        ),
        (
            "SdkBridgeControlService/SetToolCallback",
            "application/json",
            br#"{"url":"http://127.0.0.1:9/"}"#.to_vec(),
            None,
        ),
        ("SdkCursorService/Me", "application/json", b"{}".to_vec(), None),
        (
            "SdkAgentService/GetAgent",
            "application/json",
            br#"{"agentId":"agent-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/ArchiveAgent",
            "application/json",
            br#"{"agentId":"agent-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/CloseAgent",
            "application/json",
            br#"{"agentId":"agent-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/GetUsage",
            "application/json",
            br#"{"agentId":"agent-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/GetRun",
            "application/json",
            br#"{"runId":"run-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/CancelRun",
            "application/json",
            br#"{"runId":"run-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/WaitLiveRun",
            "application/json",
            br#"{"runId":"run-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        (
            "SdkAgentService/ListAgentMessages",
            "application/json",
            br#"{"agentId":"agent-00000000-0000-0000-0000-000000000000"}"#.to_vec(),
            None,
        ),
        ("SdkBridgeControlService/Ping", "text/plain", b"{}".to_vec(), None),
        ("SdkAgentService/Nope", "application/json", b"{}".to_vec(), None),
        ("NoSuchService/Ping", "application/json", b"{}".to_vec(), None),
        ("SdkAgentService/Send", "application/json", b"{}".to_vec(), None),
    ];
    for (m, ct, body, auth) in &cases {
        let r = unary_shape(&real, m, ct, body, *auth);
        let d = unary_shape(&dbl, m, ct, body, *auth);
        assert_eq!(r, d, "{m} {ct} auth={auth:?}");
    }
    // capabilities identical
    let caps = |b: &Bridge| b.json("SdkBridgeControlService/GetVersion", json!({})).1["capabilities"].clone();
    assert_eq!(caps(&real), caps(&dbl));

    // streaming auth failure + unknown run + unknown agent, both codecs
    for codec in ["json", "proto"] {
        let shapes = |b: &Bridge, method: &str, req: Value, auth: Option<&str>| {
            let msg = encode_req(method, codec, &req);
            let (st, ct, fr) = b.stream(method, codec, &msg, auth);
            let f: Vec<(u8, BTreeSet<String>, Value)> = fr
                .iter()
                .map(|(f, p)| {
                    let v = frame_json(codec, *f, p);
                    (*f, keys(&v), v["error"]["code"].clone())
                })
                .collect();
            (st, ct, f)
        };
        let run = json!({"runId": "run-00000000-0000-0000-0000-000000000000"});
        let agent = json!({"agentId": "agent-00000000-0000-0000-0000-000000000000", "message": {"text": "hi"}});
        for (m, req, auth) in [
            ("SdkAgentService/ObserveRun", run.clone(), Some("Bearer wrong")),
            ("SdkAgentService/ObserveRun", run.clone(), None),
            ("SdkAgentService/Send", agent.clone(), None),
            ("SdkAgentService/Send", agent.clone(), Some("Bearer wrong")),
        ] {
            assert_eq!(
                shapes(&real, m, req.clone(), auth),
                shapes(&dbl, m, req, auth),
                "{m} {codec} {auth:?}"
            );
        }
    }

    // the offline failing turn: real (≈16 s) vs the double's `offline` scenario, JSON then compare shapes + key sets
    // The real turn ends after the SDK's retries, 14-17 s in, so its keepalive (sent after 15 s
    // of silence) may or may not come: sequences are compared without keepalives, and the
    // keepalive frames themselves when the real bridge sent one.
    let turn = |b: &Bridge, text: &str| {
        let id = b.create_agent(json!({"model": {"id": "composer-2"}}));
        let (sh, fr) = b.stream_shapes(
            "SdkAgentService/Send",
            "json",
            json!({"agentId": id, "message": {"text": text}}),
        );
        let (keepalives, fr): (Vec<_>, Vec<_>) = fr
            .into_iter()
            .zip(sh.iter())
            .partition(|(_, shape)| shape.as_str() == "keepalive");
        let keepalives: Vec<(u8, Vec<u8>)> = keepalives.into_iter().map(|(f, _)| f).collect();
        let fr: Vec<(u8, Vec<u8>)> = fr.into_iter().map(|(f, _)| f).collect();
        let sh: Vec<String> = sh.into_iter().filter(|s| s != "keepalive").collect();
        let ks: Vec<(BTreeSet<String>, BTreeSet<String>)> = fr
            .iter()
            .map(|(f, p)| {
                let v = frame_json("json", *f, p);
                let inner = v.get("sdkMessage").map(|m| keys(&m["message"])).unwrap_or_default();
                (keys(&v), inner)
            })
            .collect();
        let result = fr
            .iter()
            .map(|(f, p)| frame_json("json", *f, p))
            .find(|v| v.get("result").is_some())
            .unwrap();
        (
            sh,
            ks,
            keys(&result["result"]),
            keys(&result["result"]["result"]),
            keepalives,
        )
    };
    let (rs, rk, rr, rrr, rka) = turn(&real, "Say hi");
    let (ds, dk, dr, drr, dka) = turn(&dbl, "scenario:offline");
    assert_eq!(dka.len(), 1, "the double's offline turn has its keepalive");
    if let Some(real_keepalive) = rka.first() {
        assert_eq!(real_keepalive, &dka[0], "keepalive framing");
    }
    assert_eq!(rs, ds);
    assert_eq!(rk, dk);
    assert_eq!(rr, dr);
    assert_eq!(rrr, drr);
}
