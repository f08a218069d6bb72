//! The callback server's request handling (`callback.rs`: request heads, chunked and
//! Content-Length bodies, the token check, keep-alive), fed whole connections: each input is
//! written to a real loopback `CallbackServer` whose dispatch records its calls, then the write
//! side is closed and the answer read to its end.
//!
//! A real server rather than the parser over an in-memory reader: the parser reads from the
//! socket itself (read timeouts, the linger after a rejection), and what matters is what a local
//! client can make the server do over a connection.
//!
//! `@TOKEN@` in the input is replaced by the server's token (seeds carry it where the bridge
//! sends its bearer token), so the fuzzer reaches the body parsing.
#![no_main]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cursor_sdk::callback::{CallbackServer, Dispatch, Reply};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const PLACEHOLDER: &[u8] = b"@TOKEN@";

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(bool, Value)>>,
}

impl Dispatch for Recorder {
    fn call_tool(&self, request: Value) -> Reply {
        self.calls.lock().unwrap().push((true, request));
        Ok(json!({"result": {"content": [{"type": "text", "text": "ok"}]}}))
    }
    fn call_store(&self, request: Value) -> Reply {
        self.calls.lock().unwrap().push((false, request));
        Ok(json!({}))
    }
    fn cancel(&self) {}
}

fn server() -> &'static (CallbackServer, Arc<Recorder>) {
    static SERVER: OnceLock<(CallbackServer, Arc<Recorder>)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let recorder = Arc::new(Recorder::default());
        let server = CallbackServer::start(recorder.clone()).expect("callback server starts");
        (server, recorder)
    })
}

/// Splits the server's answer into responses; each must be a whole HTTP/1.1 response with a
/// Content-Length body, and only the last may close the connection. Returns their statuses.
fn responses(mut out: &[u8]) -> Vec<u16> {
    let mut statuses = Vec::new();
    while !out.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        let head = match resp.parse(out) {
            Ok(httparse::Status::Complete(n)) => n,
            other => panic!(
                "not a whole response head ({other:?}): {:?}",
                String::from_utf8_lossy(out)
            ),
        };
        let length: usize = resp
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.parse().ok())
            .expect("a Content-Length");
        assert!(out.len() >= head + length, "a truncated response body");
        let status = resp.code.expect("a status");
        let close = resp
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close"));
        assert!(!close || out.len() == head + length, "a response after one that closes");
        let body = &out[head..head + length];
        if status == 200 {
            serde_json::from_slice::<Value>(body).expect("a JSON body");
        }
        statuses.push(status);
        out = &out[head + length..];
    }
    statuses
}

fuzz_target!(|input: &[u8]| {
    let (server, recorder) = server();
    let mut bytes = Vec::with_capacity(input.len() + 64);
    let mut rest = input;
    while let Some(at) = rest.windows(PLACEHOLDER.len()).position(|w| w == PLACEHOLDER) {
        bytes.extend_from_slice(&rest[..at]);
        bytes.extend_from_slice(server.token().as_bytes());
        rest = &rest[at + PLACEHOLDER.len()..];
    }
    bytes.extend_from_slice(rest);
    let has_token = bytes.len() != input.len();

    recorder.calls.lock().unwrap().clear();
    let addr = server.url().strip_prefix("http://").unwrap();
    let mut conn = TcpStream::connect(addr).expect("connect to the callback server");
    // Generous: the server answers each request of a closed connection at once.
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A rejected request closes the connection early: later writes may fail.
    let _ = conn.write_all(&bytes);
    let _ = conn.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    if let Err(e) = conn.read_to_end(&mut out) {
        assert_ne!(
            e.kind(),
            std::io::ErrorKind::WouldBlock,
            "no end of the answer within 10 s"
        );
    }
    let calls = std::mem::take(&mut *recorder.calls.lock().unwrap());
    if !has_token {
        assert!(calls.is_empty(), "dispatched without the token: {calls:?}");
    }
    let statuses = responses(&out);
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        calls.len(),
        "one 200 per dispatched call: {statuses:?}"
    );
});
