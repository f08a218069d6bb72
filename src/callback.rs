//! The callback server: the bridge calls us here for custom tools and custom stores.
//!
//! Loopback only (127.0.0.1), a fresh 256-bit bearer token compared in constant time, `httparse`
//! request heads, Content-Length and chunked bodies (the bridge always sends chunked),
//! TCP_NODELAY and one write per response (without them each callback costs ~45 ms), and
//! keep-alive. Hardening against other local processes:
//! - the method, path, token, content type and declared length are checked on the request head
//!   before any body byte is read: a rejected request is answered at once and closed;
//! - at most [`MAX_CONNECTIONS`] connections (one thread each); when all are taken, a new one
//!   evicts the connection idle the longest, or waits in the kernel backlog if none is idle;
//! - a head must be complete within [`HEAD_DEADLINE`] of its first byte, every body read must
//!   progress within [`READ_TIMEOUT`], and a connection idle for [`IDLE_TIMEOUT`] is closed.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};

/// Largest request body we accept (tool arguments, store records).
pub const MAX_BODY_BYTES: usize = 32 << 20;
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Concurrent connections (each has a thread). The bridge opens one per callback in flight
/// and reuses them (keep-alive); callbacks in flight are bounded by the tool calls the model
/// runs in parallel across this client's runs (a handful, rarely tens), so 64 leaves ample room
/// while bounding what a local process can make us spend (64 threads, 64 sockets).
pub const MAX_CONNECTIONS: usize = 64;
/// A connection that sends nothing for this long is closed (the bridge reconnects).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A request head must be complete this long after its first byte (the bridge sends it in
/// one write).
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Once a body has started, each read must progress within this long.
pub const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// After rejecting a request, how much of what the client already sent we discard (so closing
/// does not reset the connection before it reads our answer), and for how long at most.
const LINGER_BYTES: usize = 256 * 1024;
const LINGER_TIME: Duration = Duration::from_millis(100);

pub const TOOL_PATH: &str = "/sdk.v1.SdkCustomToolCallbackService/CallCustomTool";
pub const STORE_PATH: &str = "/sdk.v1.SdkStoreCallbackService/CallStore";

/// A handler's answer: the JSON body of a 200, or a Connect error.
pub type Reply = std::result::Result<Value, Error>;

/// What the server dispatches to (tools and store); called on connection threads.
pub trait Dispatch: Send + Sync {
    fn call_tool(&self, request: Value) -> Reply;
    fn call_store(&self, request: Value) -> Reply;
    /// Refuse new calls and stop every call that waits for something other than user code
    /// already running (e.g. a tool call waiting for a late completion), answering it with an
    /// error: `CallbackServer::stop` then waits for the dispatches in progress.
    fn cancel(&self);
}

/// A running callback server. Stops (closing every connection) on `stop` or drop.
pub struct CallbackServer {
    url: String,
    token: String,
    shared: Arc<Shared>,
    dispatch: Arc<dyn Dispatch>,
    acceptor: Mutex<Option<JoinHandle<()>>>,
    addr: SocketAddr,
}

/// What the acceptor, the connection threads and `stop` share.
struct Shared {
    id: u64,
    stopping: AtomicBool,
    conns: Mutex<Conns>,
    /// Signalled when a connection ends or goes idle.
    changed: Condvar,
}

#[derive(Default)]
struct Conns {
    live: HashMap<u64, Conn>,
}

struct Conn {
    /// A clone of the socket, to close it from outside.
    socket: TcpStream,
    /// `Some(since)` while waiting for the next request: the connection may be evicted.
    idle_since: Option<Instant>,
    evicted: bool,
}

static SERVER_IDS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The server whose connection this thread serves: `stop` from inside a callback must not
    /// wait for its own thread.
    static SERVING: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

impl CallbackServer {
    pub fn start(dispatch: Arc<dyn Dispatch>) -> Result<CallbackServer> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::new(ErrorKind::Internal, format!("callback server: cannot listen: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::internal(format!("callback server: {e}")))?;
        let token = new_token()?;
        let shared = Arc::new(Shared {
            id: SERVER_IDS.fetch_add(1, Ordering::Relaxed),
            stopping: AtomicBool::new(false),
            conns: Mutex::new(Conns::default()),
            changed: Condvar::new(),
        });
        let ctx = Arc::new(Ctx {
            token: token.clone(),
            dispatch: dispatch.clone(),
        });
        let shared2 = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("cursor-callbacks".into())
            .spawn(move || accept_loop(listener, ctx, shared2))
            .map_err(|e| Error::internal(format!("callback server thread: {e}")))?;
        Ok(CallbackServer {
            url: format!("http://{addr}"),
            token,
            shared,
            dispatch,
            acceptor: Mutex::new(Some(acceptor)),
            addr,
        })
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bearer token the bridge must present. Never log it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Stops accepting, closes every connection, has the dispatcher cancel what waits for
    /// something other than running user code (`Dispatch::cancel`), and returns once no
    /// dispatch this server started is running (waiting for callbacks in progress to return,
    /// without a timeout). Idempotent. Called from inside a callback it does not wait for that
    /// callback's own connection.
    pub fn stop(&self) {
        if !self.shared.stopping.swap(true, Ordering::AcqRel) {
            // Wake a blocking accept with a throwaway connection.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
            // Under the lock, so an acceptor waiting for a slot cannot miss the wake-up.
            drop(self.shared.conns.lock());
            self.shared.changed.notify_all();
            if let Some(t) = self.acceptor.lock().take() {
                let _ = t.join();
            }
            self.dispatch.cancel();
        }
        let own = usize::from(SERVING.with(|s| s.get()) == Some(self.shared.id));
        let mut conns = self.shared.conns.lock();
        loop {
            // Connections accepted just before the acceptor stopped are closed here too.
            for c in conns.live.values() {
                let _ = c.socket.shutdown(Shutdown::Both);
            }
            if conns.live.len() <= own {
                break;
            }
            self.shared.changed.wait(&mut conns);
        }
    }
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Ctx {
    token: String,
    dispatch: Arc<dyn Dispatch>,
}

/// 16 random bytes as hex: for idempotency keys.
pub(crate) fn random_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// 32 random bytes, base64url: 43 characters.
fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for the callback token: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

impl Shared {
    /// Waits for a connection slot, evicting the longest-idle connection when all are taken.
    /// `false`: the server is stopping.
    fn reserve(&self) -> bool {
        let mut conns = self.conns.lock();
        loop {
            if self.stopping.load(Ordering::Acquire) {
                return false;
            }
            if conns.live.len() < MAX_CONNECTIONS {
                return true;
            }
            // One eviction at a time: a victim frees its slot as soon as its thread sees EOF.
            if !conns.live.values().any(|c| c.evicted) {
                let oldest = conns
                    .live
                    .values_mut()
                    .filter_map(|c| c.idle_since.map(|t| (t, c)))
                    .min_by_key(|(t, _)| *t);
                if let Some((_, victim)) = oldest {
                    victim.evicted = true;
                    let _ = victim.socket.shutdown(Shutdown::Both);
                }
            }
            // Its thread ends (or some connection goes idle) and signals.
            self.changed.wait(&mut conns);
        }
    }

    /// Marks a connection idle (evictable) or busy. `false`: it was evicted, or the server is
    /// stopping: end it.
    fn set_idle(&self, id: u64, idle: bool) -> bool {
        let mut conns = self.conns.lock();
        let Some(c) = conns.live.get_mut(&id) else { return false };
        if c.evicted || self.stopping.load(Ordering::Acquire) {
            return false;
        }
        c.idle_since = idle.then(Instant::now);
        drop(conns);
        if idle {
            self.changed.notify_all();
        }
        true
    }

    fn remove(&self, id: u64) {
        self.conns.lock().live.remove(&id);
        self.changed.notify_all();
    }
}

fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>, shared: Arc<Shared>) {
    for (id, stream) in (0u64..).zip(listener.incoming()) {
        if shared.stopping.load(Ordering::Acquire) {
            break;
        }
        let Ok(stream) = stream else { continue };
        // With every slot busy, further connections wait in the kernel backlog.
        if !shared.reserve() {
            break;
        }
        let _ = stream.set_nodelay(true);
        let Ok(socket) = stream.try_clone() else { continue };
        shared.conns.lock().live.insert(
            id,
            Conn {
                socket,
                idle_since: None,
                evicted: false,
            },
        );
        let (ctx, shared2) = (ctx.clone(), shared.clone());
        let spawned = std::thread::Builder::new()
            .name("cursor-callback-conn".into())
            .spawn(move || {
                SERVING.with(|s| s.set(Some(shared2.id)));
                serve(&stream, &ctx, &shared2, id);
                drop(ctx);
                let _ = stream.shutdown(Shutdown::Both);
                shared2.remove(id);
            });
        if spawned.is_err() {
            if let Some(c) = shared.conns.lock().live.remove(&id) {
                let _ = c.socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Serves requests on one keep-alive connection until it closes, errs, idles out or is
/// evicted.
fn serve(stream: &TcpStream, ctx: &Ctx, shared: &Shared, id: u64) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut writer = stream;
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);
    loop {
        if !shared.set_idle(id, true) {
            return;
        }
        let _ = reader.get_ref().set_read_timeout(Some(IDLE_TIMEOUT));
        match reader.fill_buf() {
            Ok(b) if !b.is_empty() => {}
            _ => return,
        }
        if !shared.set_idle(id, false) {
            return;
        }
        let request = match read_request(&mut reader, &ctx.token) {
            Ok(r) => r,
            Err(resp) => {
                let _ = writer.write_all(&resp);
                linger(&mut reader);
                return;
            }
        };
        let response = dispatch(ctx, &request);
        if writer.write_all(&response).is_err() || request.close {
            return;
        }
    }
}

/// Discards (without keeping) a little of what the client already sent after a rejection, so
/// closing does not reset the connection before the client has read our answer.
fn linger(reader: &mut BufReader<TcpStream>) {
    let _ = reader.get_ref().shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER_TIME;
    let mut buf = [0u8; 16 * 1024];
    let mut discarded = 0;
    while discarded < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || reader.get_ref().set_read_timeout(Some(left)).is_err() {
            return;
        }
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => discarded += n,
        }
    }
}

struct Request {
    tool: bool,
    body: Vec<u8>,
    close: bool,
}

/// Reads the head (within `HEAD_DEADLINE`), checks it against `token`, then reads the body.
/// `Err(bytes)`: a response to send before closing (malformed, unauthenticated, too large, too
/// slow).
fn read_request(reader: &mut BufReader<TcpStream>, token: &str) -> std::result::Result<Request, Vec<u8>> {
    let head = read_head(reader)?;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(plain(400, "malformed request")),
    }
    if req.method != Some("POST") {
        return Err(plain(405, "only POST"));
    }
    let path = req.path.unwrap_or("").split('?').next().unwrap_or("");
    if path != TOOL_PATH && path != STORE_PATH {
        return Err(plain(404, ""));
    }
    let tool = path == TOOL_PATH;
    let (mut auth, mut content_type, mut length, mut chunked, mut close) = (None, String::new(), None, false, false);
    for h in req.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_string();
        match h.name.to_ascii_lowercase().as_str() {
            // The first Authorization header wins, like the bridge's own server.
            "authorization" if auth.is_none() => auth = Some(value),
            "content-type" => content_type = value.to_ascii_lowercase(),
            "content-length" => match value.parse::<usize>() {
                Ok(n) => length = Some(n),
                Err(_) => return Err(plain(400, "bad Content-Length")),
            },
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    if req.version == Some(0) {
        close = true;
    }
    if !authorized(auth.as_deref(), token) {
        return Err(connect_error(&Error::new(ErrorKind::Auth, "Unauthorized"), 401, true));
    }
    if !content_type.starts_with("application/json") {
        return Err(plain(415, ""));
    }
    if !chunked && length.unwrap_or(0) > MAX_BODY_BYTES {
        return Err(plain(413, "request body too large"));
    }
    let _ = reader.get_ref().set_read_timeout(Some(READ_TIMEOUT));
    let body = if chunked {
        let mut decoder = chunked_transfer::Decoder::new(&mut *reader).take(MAX_BODY_BYTES as u64 + 1);
        let mut body = Vec::new();
        if decoder.read_to_end(&mut body).is_err() {
            return Err(plain(400, "malformed chunked body"));
        }
        body
    } else {
        let mut body = vec![0u8; length.unwrap_or(0)];
        if reader.read_exact(&mut body).is_err() {
            return Err(plain(400, "truncated body"));
        }
        body
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(plain(413, "request body too large"));
    }
    Ok(Request { tool, body, close })
}

/// Reads a request head whose first byte is buffered already, within `HEAD_DEADLINE`; reads
/// nothing past its blank line.
fn read_head(reader: &mut BufReader<TcpStream>) -> std::result::Result<Vec<u8>, Vec<u8>> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut head = Vec::with_capacity(1024);
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => return Err(plain(408, "request head timed out")),
            Err(_) => return Err(plain(400, "truncated request")),
        };
        if buf.is_empty() {
            return Err(plain(400, "truncated request"));
        }
        let start = head.len();
        head.extend_from_slice(buf);
        // The blank line may straddle two reads: search from just before the new bytes.
        let from = start.saturating_sub(3);
        if let Some(end) = head[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|p| from + p + 4)
        {
            reader.consume(end - start);
            head.truncate(end);
            return Ok(head);
        }
        let n = buf.len();
        reader.consume(n);
        if head.len() > MAX_HEAD_BYTES {
            return Err(plain(431, "request head too large"));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || reader.get_ref().set_read_timeout(Some(left)).is_err() {
            return Err(plain(408, "request head timed out"));
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Dispatches one authenticated request; returns the full response bytes.
fn dispatch(ctx: &Ctx, req: &Request) -> Vec<u8> {
    let request: Value = match serde_json::from_slice(&req.body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return connect_error(
                &Error::invalid_argument("the request body must be a JSON object"),
                400,
                false,
            )
        }
    };
    let reply = if req.tool {
        ctx.dispatch.call_tool(request)
    } else {
        ctx.dispatch.call_store(request)
    };
    match reply {
        Ok(v) => json_response(200, &v, false),
        Err(e) => {
            let status = match e.kind {
                ErrorKind::InvalidArgument => 400,
                ErrorKind::NotFound => 404,
                ErrorKind::Auth => 401,
                ErrorKind::Timeout => 504,
                _ => 500,
            };
            connect_error(&e, status, false)
        }
    }
}

/// Constant-time comparison of `Bearer <token>`.
fn authorized(header: Option<&str>, token: &str) -> bool {
    let Some(given) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for (i, expected) in b.iter().enumerate() {
        diff |= a.get(i).copied().unwrap_or(0) ^ expected;
    }
    diff == 0
}

fn connect_code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "invalid_argument",
        ErrorKind::Auth => "unauthenticated",
        ErrorKind::NotFound => "not_found",
        ErrorKind::Timeout => "deadline_exceeded",
        ErrorKind::Unsupported => "unimplemented",
        _ => "internal",
    }
}

fn connect_error(e: &Error, status: u16, close: bool) -> Vec<u8> {
    json_response(
        status,
        &json!({"code": connect_code(e.kind), "message": e.message}),
        close,
    )
}

fn json_response(status: u16, body: &Value, close: bool) -> Vec<u8> {
    let body = body.to_string();
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if close { "close" } else { "keep-alive" }
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn plain(status: u16, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        504 => "Gateway Timeout",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Echo(AtomicUsize);
    impl Dispatch for Echo {
        fn call_tool(&self, request: Value) -> Reply {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"result": request}))
        }
        fn call_store(&self, _request: Value) -> Reply {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(Error::internal("disk on fire"))
        }
        fn cancel(&self) {}
    }

    fn raw(server: &CallbackServer, bytes: &[u8]) -> String {
        let mut s = TcpStream::connect(server.url().trim_start_matches("http://")).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(bytes).unwrap();
        let _ = s.shutdown(Shutdown::Write);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn post(path: &str, token: Option<&str>, body: &str, chunked: bool) -> Vec<u8> {
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let framing = if chunked {
            format!(
                "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                body.len()
            )
        } else {
            format!("Content-Length: {}\r\n\r\n{body}", body.len())
        };
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nConnection: close\r\n{framing}"
        )
        .into_bytes()
    }

    #[test]
    fn token_is_required_and_compared_exactly() {
        let d = Arc::new(Echo(AtomicUsize::new(0)));
        let server = CallbackServer::start(d.clone()).unwrap();
        assert_eq!(server.token().len(), 43);
        let t = server.token().to_string();
        for bad in [None, Some("wrong"), Some(&t[..42]), Some(&*format!("{t}x"))] {
            let resp = raw(&server, &post(TOOL_PATH, bad, "{}", false));
            assert!(resp.starts_with("HTTP/1.1 401"), "{resp}");
            assert!(resp.contains("unauthenticated"));
        }
        assert_eq!(d.0.load(Ordering::SeqCst), 0, "a handler ran without the token");
        let ok = raw(&server, &post(TOOL_PATH, Some(&t), r#"{"toolName":"x"}"#, true));
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains(r#""toolName":"x""#));
        assert_eq!(d.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn routing_errors_and_limits() {
        let d = Arc::new(Echo(AtomicUsize::new(0)));
        let server = CallbackServer::start(d.clone()).unwrap();
        let t = server.token().to_string();
        assert!(raw(&server, &post("/nope", Some(&t), "{}", false)).starts_with("HTTP/1.1 404"));
        assert!(raw(&server, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(raw(&server, b"garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        assert!(raw(&server, &post(TOOL_PATH, Some(&t), "[1]", false)).starts_with("HTTP/1.1 400"));
        let store = raw(&server, &post(STORE_PATH, Some(&t), "{}", false));
        assert!(
            store.starts_with("HTTP/1.1 500") && store.contains("disk on fire"),
            "{store}"
        );
        let huge = format!(
            "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY_BYTES + 1
        );
        assert!(raw(&server, huge.as_bytes()).starts_with("HTTP/1.1 413"));
        let bad_chunks = format!(
            "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        );
        assert!(raw(&server, bad_chunks.as_bytes()).starts_with("HTTP/1.1 400"));
    }

    #[test]
    fn keep_alive_serves_many_requests_on_one_connection() {
        let d = Arc::new(Echo(AtomicUsize::new(0)));
        let server = CallbackServer::start(d.clone()).unwrap();
        let t = server.token().to_string();
        let mut s = TcpStream::connect(server.url().trim_start_matches("http://")).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        for i in 0..20 {
            let body = format!(r#"{{"i":{i}}}"#);
            let req = format!(
                "POST {TOOL_PATH} HTTP/1.1\r\nAuthorization: Bearer {t}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes()).unwrap();
            let mut status = String::new();
            r.read_line(&mut status).unwrap();
            assert!(status.starts_with("HTTP/1.1 200"), "{status}");
            let mut len = 0;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length: ") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
        }
        assert_eq!(d.0.load(Ordering::SeqCst), 20);
        server.stop();
        server.stop();
    }
}
