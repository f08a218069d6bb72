//! The callback server: the bridge calls us here for custom tools and custom stores.
//!
//! Loopback only (127.0.0.1), a fresh 256-bit bearer token compared in constant time on every
//! request (a missing or wrong token never reaches a handler), `httparse` request heads,
//! Content-Length and chunked bodies (the bridge always sends chunked), TCP_NODELAY and one
//! write per response (without them each callback costs ~45 ms), a request size cap, read
//! timeouts against slow clients, keep-alive, and a thread per connection so calls for
//! different tool calls run concurrently.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};

/// Largest request body we accept (tool arguments, store records).
pub const MAX_BODY_BYTES: usize = 32 << 20;
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// A connection that sends nothing for this long is closed (the bridge reconnects).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `stop` waits for calls in progress.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Once a request has started, each read must progress within this long.
const READ_TIMEOUT: Duration = Duration::from_secs(15);

pub const TOOL_PATH: &str = "/sdk.v1.SdkCustomToolCallbackService/CallCustomTool";
pub const STORE_PATH: &str = "/sdk.v1.SdkStoreCallbackService/CallStore";

/// A handler's answer: the JSON body of a 200, or a Connect error.
pub type Reply = std::result::Result<Value, Error>;

/// What the server dispatches to (tools and store); called on connection threads.
pub trait Dispatch: Send + Sync {
    fn call_tool(&self, request: Value) -> Reply;
    fn call_store(&self, request: Value) -> Reply;
}

/// A running callback server. Stops (closing every connection) on `stop` or drop.
pub struct CallbackServer {
    url: String,
    token: String,
    stopping: Arc<AtomicBool>,
    conns: Conns,
    acceptor: Mutex<Option<JoinHandle<()>>>,
    addr: SocketAddr,
}

impl CallbackServer {
    pub fn start(dispatch: Arc<dyn Dispatch>) -> Result<CallbackServer> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::new(ErrorKind::Internal, format!("callback server: cannot listen: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::internal(format!("callback server: {e}")))?;
        let token = new_token()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let conns: Conns = Arc::new(Mutex::new(HashMap::new()));
        let ctx = Arc::new(Ctx {
            token: token.clone(),
            dispatch,
        });
        let (stop2, conns2) = (stopping.clone(), conns.clone());
        let acceptor = std::thread::Builder::new()
            .name("cursor-callbacks".into())
            .spawn(move || accept_loop(listener, ctx, stop2, conns2))
            .map_err(|e| Error::internal(format!("callback server thread: {e}")))?;
        Ok(CallbackServer {
            url: format!("http://{addr}"),
            token,
            stopping,
            conns,
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

    /// Stops accepting, closes live connections, joins the acceptor. Idempotent.
    pub fn stop(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the blocking accept with a throwaway connection.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        for c in self.conns.lock().values() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.acceptor.lock().take() {
            let _ = t.join();
        }
        // Let connection threads finish the call they are in (bounded), so handlers (and the
        // user data behind them) are released by the time `stop` returns.
        let deadline = std::time::Instant::now() + STOP_GRACE;
        while !self.conns.lock().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
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

/// Live connections, so `stop` can close them; each removes itself when it ends.
type Conns = Arc<Mutex<HashMap<u64, TcpStream>>>;

fn accept_loop(listener: TcpListener, ctx: Arc<Ctx>, stopping: Arc<AtomicBool>, conns: Conns) {
    for (id, stream) in (0u64..).zip(listener.incoming()) {
        if stopping.load(Ordering::Acquire) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let Ok(clone) = stream.try_clone() else { continue };
        conns.lock().insert(id, clone);
        let (ctx, registry) = (ctx.clone(), conns.clone());
        let spawned = std::thread::Builder::new()
            .name("cursor-callback-conn".into())
            .spawn(move || {
                serve(&stream, &ctx);
                drop(ctx);
                // The registry holds a clone of the socket: close it for real.
                let _ = stream.shutdown(Shutdown::Both);
                registry.lock().remove(&id);
            });
        if spawned.is_err() {
            if let Some(s) = conns.lock().remove(&id) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Serves requests on one keep-alive connection until it closes, errs or idles out.
fn serve(stream: &TcpStream, ctx: &Ctx) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut writer = stream;
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);
    loop {
        let _ = reader.get_ref().set_read_timeout(Some(IDLE_TIMEOUT));
        let request = match read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(resp) => {
                let _ = writer.write_all(&resp);
                return;
            }
        };
        let response = handle(
            ctx,
            request.path.as_str(),
            request.auth.as_deref(),
            &request.content_type,
            &request.body,
        );
        if writer.write_all(&response).is_err() || request.close {
            return;
        }
    }
}

struct Request {
    path: String,
    auth: Option<String>,
    content_type: String,
    body: Vec<u8>,
    close: bool,
}

/// Reads one request. `Ok(None)`: the peer closed between requests. `Err(bytes)`: a response
/// to send before closing (malformed, too large, too slow).
fn read_request(reader: &mut BufReader<TcpStream>) -> std::result::Result<Option<Request>, Vec<u8>> {
    let mut head = Vec::with_capacity(1024);
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if head.is_empty() && is_timeout(&e) => return Ok(None),
            Err(_) if head.is_empty() => return Ok(None),
            Err(_) => return Err(plain(408, "request timed out")),
        };
        if buf.is_empty() {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(plain(400, "truncated request"))
            };
        }
        let started = head.is_empty();
        let start = head.len();
        head.extend_from_slice(buf);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4) {
            reader.consume(end - start);
            head.truncate(end);
            break;
        }
        let n = buf.len();
        reader.consume(n);
        if started {
            // A request has begun: from now on it must keep moving.
            let _ = reader.get_ref().set_read_timeout(Some(READ_TIMEOUT));
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(plain(431, "request head too large"));
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(plain(400, "malformed request")),
    }
    if req.method != Some("POST") {
        return Err(plain(405, "only POST"));
    }
    let path = req.path.unwrap_or("").to_string();
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
    let body = if chunked {
        let mut decoder = chunked_transfer::Decoder::new(&mut *reader).take(MAX_BODY_BYTES as u64 + 1);
        let mut body = Vec::new();
        if decoder.read_to_end(&mut body).is_err() {
            return Err(plain(400, "malformed chunked body"));
        }
        body
    } else {
        let n = length.unwrap_or(0);
        if n > MAX_BODY_BYTES {
            return Err(plain(413, "request body too large"));
        }
        let mut body = vec![0u8; n];
        if reader.read_exact(&mut body).is_err() {
            return Err(plain(400, "truncated body"));
        }
        body
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(plain(413, "request body too large"));
    }
    Ok(Some(Request {
        path,
        auth,
        content_type,
        body,
        close,
    }))
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Routes, authenticates and dispatches one request; returns the full response bytes.
fn handle(ctx: &Ctx, path: &str, auth: Option<&str>, content_type: &str, body: &[u8]) -> Vec<u8> {
    let path = path.split('?').next().unwrap_or("");
    if path != TOOL_PATH && path != STORE_PATH {
        return plain(404, "");
    }
    if !authorized(auth, &ctx.token) {
        return connect_error(&Error::new(ErrorKind::Auth, "Unauthorized"), 401);
    }
    if !content_type.starts_with("application/json") {
        return plain(415, "");
    }
    let request: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        _ => return connect_error(&Error::invalid_argument("the request body must be a JSON object"), 400),
    };
    let reply = if path == TOOL_PATH {
        ctx.dispatch.call_tool(request)
    } else {
        ctx.dispatch.call_store(request)
    };
    match reply {
        Ok(v) => json_response(200, &v),
        Err(e) => {
            let status = match e.kind {
                ErrorKind::InvalidArgument => 400,
                ErrorKind::NotFound => 404,
                ErrorKind::Auth => 401,
                ErrorKind::Timeout => 504,
                _ => 500,
            };
            connect_error(&e, status)
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

fn connect_error(e: &Error, status: u16) -> Vec<u8> {
    json_response(status, &json!({"code": connect_code(e.kind), "message": e.message}))
}

fn json_response(status: u16, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
        reason(status),
        body.len()
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
