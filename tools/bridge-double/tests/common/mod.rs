//! Test harness: spawn a bridge (double or real), raw Connect calls, frame decoding into comparable shapes.
#![allow(dead_code, clippy::all)]

pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/sdk.v1.serde.rs"));
}

use prost::Message;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const DOUBLE: &str = env!("CARGO_BIN_EXE_cursor-sdk-bridge-double");

pub struct Bridge {
    pub child: Child,
    pub pid: i32,
    pub port: u16,
    pub token: String,
    pub token_dir: String,
    pub ready: Value,
    pub workspace: tempdir::TempDir,
}

pub mod tempdir {
    pub struct TempDir(pub String);
    impl TempDir {
        pub fn new(tag: &str) -> TempDir {
            let base = std::env::temp_dir().join(format!(
                "bridge-double-test-{tag}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            ));
            std::fs::create_dir_all(&base).unwrap();
            TempDir(base.to_string_lossy().into_owned())
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Bridge {
    pub fn double(args: &[&str], env: &[(&str, &str)]) -> Bridge {
        Bridge::spawn(DOUBLE, args, env)
    }

    pub fn spawn(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Bridge {
        let ws = tempdir::TempDir::new("ws");
        let mut cmd = Command::new(bin);
        cmd.arg("--workspace").arg(&ws.0).args(args).current_dir(&ws.0);
        // The real bridge keeps its stores under ~/.cursor: keep them in the test's own dir.
        cmd.env("HOME", &ws.0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().expect("spawn bridge");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            // drain stderr for the bridge's whole life
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let ready = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(js) = line.strip_prefix("cursor-sdk-bridge ready ") {
                        break serde_json::from_str::<Value>(js).unwrap();
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("bridge {bin} did not print its ready line");
                }
            }
        };
        let token_file = ready["authTokenFile"].as_str().unwrap().to_string();
        let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
        let token_dir = std::path::Path::new(&token_file)
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        Bridge {
            pid: ready["pid"].as_i64().unwrap() as i32,
            port: ready["port"].as_u64().unwrap() as u16,
            child,
            token,
            token_dir,
            ready,
            workspace: ws,
        }
    }

    pub fn ws(&self) -> &str {
        &self.workspace.0
    }

    /// Unary call: (status, content-type, body).
    pub fn unary(&self, method: &str, ct: &str, body: &[u8], auth: Option<&str>) -> (u16, String, Vec<u8>) {
        let tok = auth
            .map(String::from)
            .unwrap_or_else(|| format!("Bearer {}", self.token));
        raw_post(self.port, &format!("/sdk.v1.{method}"), ct, body, Some(&tok))
    }

    pub fn json(&self, method: &str, body: Value) -> (u16, Value) {
        let (s, _, b) = self.unary(method, "application/json", body.to_string().as_bytes(), None);
        (s, serde_json::from_slice(&b).unwrap_or(Value::Null))
    }

    pub fn stream(
        &self,
        method: &str,
        codec: &str,
        msg: &[u8],
        auth: Option<&str>,
    ) -> (u16, String, Vec<(u8, Vec<u8>)>) {
        let tok = auth
            .map(String::from)
            .unwrap_or_else(|| format!("Bearer {}", self.token));
        let mut body = vec![0u8];
        body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        body.extend_from_slice(msg);
        let ct = format!("application/connect+{codec}");
        let (s, ct, b) = raw_post(self.port, &format!("/sdk.v1.{method}"), &ct, &body, Some(&tok));
        (s, ct, frames(&b))
    }

    /// JSON Send/Observe with the body as JSON; returns shapes.
    pub fn stream_shapes(&self, method: &str, codec: &str, req: Value) -> (Vec<String>, Vec<(u8, Vec<u8>)>) {
        let msg = encode_req(method, codec, &req);
        let (s, _, fr) = self.stream(method, codec, &msg, None);
        assert_eq!(s, 200);
        (fr.iter().map(|(f, p)| shape(codec, *f, p)).collect(), fr)
    }

    pub fn create_agent(&self, opts: Value) -> String {
        let (s, v) = self.json("SdkAgentService/CreateAgent", json!({"options": opts}));
        assert_eq!(s, 200, "{v}");
        v["agentId"].as_str().unwrap().to_string()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // SAFETY: signalling our own child's process group and node's pid from its ready line.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::killpg(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.token_dir);
    }
}

pub fn encode_req(method: &str, codec: &str, req: &Value) -> Vec<u8> {
    if codec == "json" {
        return req.to_string().into_bytes();
    }
    match method {
        "SdkAgentService/Send" => serde_json::from_value::<proto::SendRequest>(req.clone())
            .unwrap()
            .encode_to_vec(),
        "SdkAgentService/ObserveRun" => serde_json::from_value::<proto::ObserveRunRequest>(req.clone())
            .unwrap()
            .encode_to_vec(),
        "SdkAgentService/DownloadArtifact" => serde_json::from_value::<proto::DownloadArtifactRequest>(req.clone())
            .unwrap()
            .encode_to_vec(),
        m => panic!("no proto encoder for {m}"),
    }
}

pub fn raw_post(port: u16, path: &str, ct: &str, body: &[u8], auth: Option<&str>) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nconnect-protocol-version: 1\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(a) = auth {
        req.push_str(&format!("authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    s.write_all(&out).unwrap();
    read_response(&mut BufReader::new(s))
}

pub fn raw_request(port: u16, raw: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw).unwrap();
    read_response(&mut BufReader::new(s))
}

pub fn read_response<R: Read>(r: &mut BufReader<R>) -> (u16, String, Vec<u8>) {
    let mut status = 0;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if status == 0 {
            status = l.split(' ').nth(1).unwrap().parse().unwrap();
            continue;
        }
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let h = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if h("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        // tolerate a connection cut mid-stream (drop/die scenarios): keep what arrived
        let mut dec = chunked_transfer::Decoder::new(r);
        let mut buf = [0u8; 65536];
        loop {
            match dec.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => body.extend_from_slice(&buf[..n]),
            }
        }
    } else if let Some(cl) = h("content-length") {
        body.resize(cl.parse().unwrap(), 0);
        r.read_exact(&mut body).unwrap();
    }
    (status, h("content-type").unwrap_or_default(), body)
}

pub fn frames(b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 5 <= b.len() {
        let len = u32::from_be_bytes([b[i + 1], b[i + 2], b[i + 3], b[i + 4]]) as usize;
        if i + 5 + len > b.len() {
            break;
        }
        out.push((b[i], b[i + 5..i + 5 + len].to_vec()));
        i += 5 + len;
    }
    out
}

/// A RunStreamMessage frame as JSON (proto frames are converted), or the end frame JSON.
pub fn frame_json(codec: &str, flag: u8, p: &[u8]) -> Value {
    if flag & 2 != 0 || codec == "json" {
        return serde_json::from_slice(p).unwrap();
    }
    let m = proto::RunStreamMessage::decode(p).unwrap();
    let mut v = serde_json::to_value(&m).unwrap();
    // prost keeps unknown fields out; mark a frame that had bytes but no known field
    if m.envelope.is_none() && m.offset.is_some() && !p.is_empty() {
        v["futureEnvelope"] = json!({});
    }
    v
}

/// A compact, codec-independent description of a frame.
pub fn shape(codec: &str, flag: u8, p: &[u8]) -> String {
    let v = frame_json(codec, flag, p);
    if flag & 2 != 0 {
        return match v.get("error") {
            Some(e) => format!("end:error:{}", e["code"].as_str().unwrap_or("")),
            None => "end".into(),
        };
    }
    let off = v
        .get("offset")
        .and_then(Value::as_str)
        .map(|o| format!("@{o}"))
        .unwrap_or_default();
    let body = if let Some(m) = v.get("sdkMessage") {
        let t = m["type"].as_str().unwrap_or("");
        let st = m["message"]["status"]
            .as_str()
            .map(|s| format!(":{s}"))
            .unwrap_or_default();
        format!("{t}{st}")
    } else if let Some(r) = v.get("result") {
        format!(
            "result:{}",
            r["status"]
                .as_str()
                .unwrap_or("")
                .trim_start_matches("RUN_LIFECYCLE_STATUS_")
        )
    } else if v.get("done").is_some() {
        "done".into()
    } else if let Some(u) = v.get("interactionUpdate") {
        format!("delta:{}", u["type"].as_str().unwrap_or(""))
    } else if let Some(s) = v.get("step") {
        format!("step:{}", s["type"].as_str().unwrap_or(""))
    } else if v.as_object().is_some_and(|o| o.keys().all(|k| k == "offset")) {
        "keepalive".into()
    } else {
        "unknown-envelope".into()
    };
    format!("{body}{off}")
}

pub fn strip_offsets(shapes: &[String]) -> Vec<String> {
    shapes
        .iter()
        .map(|s| s.split('@').next().unwrap().to_string())
        .collect()
}
