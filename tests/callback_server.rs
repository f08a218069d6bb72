//! The callback server against hostile local clients: the head is judged before any body byte
//! is read, connections are capped (no thread each), slow heads are cut off, and `stop` waits
//! for dispatches in progress. Tests count this process's threads, so they run one at a time.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cursor_sdk::callback::{CallbackServer, Dispatch, Reply, HEAD_DEADLINE, MAX_CONNECTIONS, TOOL_PATH};
use serde_json::{json, Value};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Answers tool calls with their request; a call with `"sleepMs"` sleeps first.
#[derive(Default)]
struct Echo {
    calls: AtomicUsize,
    running: AtomicUsize,
    cancelled: AtomicBool,
}

impl Dispatch for Echo {
    fn call_tool(&self, request: Value) -> Reply {
        self.running.fetch_add(1, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(ms) = request.get("sleepMs").and_then(Value::as_u64) {
            std::thread::sleep(Duration::from_millis(ms));
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(json!({ "result": request }))
    }
    fn call_store(&self, _request: Value) -> Reply {
        Ok(json!({}))
    }
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
}

fn addr(server: &CallbackServer) -> String {
    server.url().trim_start_matches("http://").to_string()
}

/// Reads one response; returns its status line and body.
fn read_response(r: &mut BufReader<TcpStream>) -> (String, String) {
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length: ") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// One authenticated tool call on a fresh connection.
fn tool_call(server: &CallbackServer, body: &Value) -> (String, String) {
    let s = TcpStream::connect(addr(server)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = body.to_string();
    let req = format!(
        "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.token(),
        body.len()
    );
    (&s).write_all(req.as_bytes()).unwrap();
    read_response(&mut BufReader::new(s))
}

#[test]
fn unauthenticated_head_is_refused_before_its_body_is_read() {
    let _serial = serial();
    let echo = Arc::new(Echo::default());
    let server = CallbackServer::start(echo.clone()).unwrap();
    for auth in ["", "Authorization: Bearer wrong\r\n"] {
        let s = TcpStream::connect(addr(&server)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let head = format!(
            "POST {TOOL_PATH} HTTP/1.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            32 << 20
        );
        let t0 = Instant::now();
        (&s).write_all(head.as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let (status, body) = read_response(&mut r);
        let took = t0.elapsed();
        assert!(status.starts_with("HTTP/1.1 401"), "{status}");
        assert!(body.contains("unauthenticated"), "{body}");
        assert!(took < Duration::from_millis(900), "401 took {took:?}");
        eprintln!("401 for a 32 MiB announcement in {took:?}");
        // The server closed the connection instead of reading the announced 32 MiB: sending
        // them fails (reset or broken pipe) rather than being swallowed.
        let chunk = vec![b'x'; 1 << 20];
        let sent = (0..32).try_for_each(|_| (&s).write_all(&chunk));
        assert!(
            sent.is_err(),
            "the server accepted the 32 MiB body of a refused request"
        );
    }
    assert_eq!(echo.calls.load(Ordering::SeqCst), 0, "a handler ran without the token");
}

#[test]
fn idle_connections_are_capped_and_authenticated_calls_still_work() {
    let _serial = serial();
    let echo = Arc::new(Echo::default());
    let server = CallbackServer::start(echo.clone()).unwrap();
    let before = common::thread_count();
    let idle: Vec<TcpStream> = (0..500)
        .map(|i| {
            TcpStream::connect_timeout(&addr(&server).parse().unwrap(), Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("connection {i}: {e}"))
        })
        .collect();
    // Let the acceptor take in (and evict) what it will.
    std::thread::sleep(Duration::from_millis(500));
    let during = common::thread_count();
    assert!(
        during <= before + MAX_CONNECTIONS + 4,
        "{} idle connections made {} threads (cap {MAX_CONNECTIONS})",
        idle.len(),
        during - before
    );
    eprintln!("500 idle connections: {before} threads before, {during} during");
    let t0 = Instant::now();
    let (status, body) = tool_call(&server, &json!({"toolName": "t", "n": 7}));
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
    assert!(body.contains(r#""n":7"#), "{body}");
    assert!(t0.elapsed() < Duration::from_secs(2), "took {:?}", t0.elapsed());
    eprintln!("an authenticated call among them took {:?}", t0.elapsed());
    assert!(common::thread_count() <= before + MAX_CONNECTIONS + 4);
    drop(idle);
    server.stop();
    assert!(
        common::eventually(Duration::from_secs(5), || common::thread_count() <= before),
        "threads left after stop: {} > {before}",
        common::thread_count()
    );
}

#[test]
fn a_slow_head_is_cut_off() {
    let _serial = serial();
    let server = CallbackServer::start(Arc::new(Echo::default())).unwrap();
    let s = TcpStream::connect(addr(&server)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let head = format!(
        "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {}\r\n",
        server.token()
    );
    let t0 = Instant::now();
    let mut answer = Vec::new();
    // One byte every 100 ms, forever; the server must answer 408 and close.
    for b in head.bytes().cycle() {
        if (&s).write_all(&[b]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match (&s).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        assert!(
            t0.elapsed() < HEAD_DEADLINE + Duration::from_secs(5),
            "a head trickling in was not cut off"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = t0.elapsed();
    assert!(
        took >= HEAD_DEADLINE - Duration::from_millis(500),
        "cut off too early: {took:?}"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn stop_waits_for_the_dispatch_in_progress() {
    let _serial = serial();
    let echo = Arc::new(Echo::default());
    let server = Arc::new(CallbackServer::start(echo.clone()).unwrap());
    let s2 = server.clone();
    let caller = std::thread::spawn(move || {
        let s = TcpStream::connect(addr(&s2)).unwrap();
        let body = json!({"sleepMs": 2500}).to_string();
        let req = format!(
            "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            s2.token(),
            body.len()
        );
        (&s).write_all(req.as_bytes()).unwrap();
        let _ = s.shutdown(Shutdown::Write);
    });
    assert!(common::eventually(Duration::from_secs(5), || echo
        .running
        .load(Ordering::SeqCst)
        == 1));
    let t0 = Instant::now();
    server.stop();
    // The old server gave up after a 2 s grace; the handler sleeps 2.5 s.
    assert_eq!(
        echo.running.load(Ordering::SeqCst),
        0,
        "stop returned during a dispatch"
    );
    assert!(echo.cancelled.load(Ordering::SeqCst), "stop did not cancel waits");
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
    caller.join().unwrap();
}
