//! A minimal HTTP/1.1 client for one loopback peer: keep-alive connections with TCP_NODELAY,
//! requests written in one syscall, response heads parsed by `httparse`, bodies by
//! Content-Length or chunked (`chunked_transfer`).
//!
//! Written against the socket (rather than a general HTTP client) because the library needs
//! what those hide: a socket it can shut down from another thread to wake a blocked stream
//! reader, per-read deadlines, and a precise notion of "stale pooled connection".

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::frame::io_error;
use crate::error::{Error, ErrorKind, Result};
use crate::fork::Owner;

/// Longest response head we accept.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Most response headers we parse.
const MAX_HEADERS: usize = 64;
/// The bridge closes idle keep-alive connections after ~5–6 s; we retire them sooner.
const MAX_IDLE: Duration = Duration::from_secs(3);
/// Idle connections kept per peer.
const MAX_POOLED: usize = 16;

/// A socket with an optional absolute deadline applied to every read and write.
pub struct Socket {
    stream: TcpStream,
    deadline: Option<Instant>,
    idle_timeout: Option<Duration>,
    /// When the frame being waited for must be whole (see [`Socket::arm_idle`]).
    idle_deadline: Option<Instant>,
    /// The read timeout last set on the socket, so a stream's reads (a fixed idle timeout)
    /// cost one syscall each, not two.
    applied_read: Option<Option<Duration>>,
}

impl Socket {
    /// Sets an absolute deadline (unary calls) and/or a per-read idle timeout (streams).
    pub fn set_limits(&mut self, deadline: Option<Instant>, idle_timeout: Option<Duration>) {
        self.deadline = deadline;
        self.idle_timeout = idle_timeout;
    }

    pub fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// Starts the wait for the next stream frame: it must be whole within the idle timeout,
    /// so a peer that trickles a frame a byte at a time is as dead as a silent one.
    pub fn arm_idle(&mut self) {
        self.idle_deadline = self.idle_timeout.map(|d| Instant::now() + d);
    }

    fn timeout(&self) -> io::Result<Option<Duration>> {
        let deadline = match (self.deadline, self.idle_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let until_deadline = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
                }
                Some(left)
            }
            None => None,
        };
        Ok(match (until_deadline, self.idle_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = self.timeout()?;
        if self.applied_read != Some(t) {
            self.stream.set_read_timeout(t)?;
            self.applied_read = Some(t);
        }
        self.stream.read(buf)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let t = self.timeout()?;
        self.stream.set_write_timeout(t)?;
        self.stream.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// One keep-alive connection.
pub struct Conn {
    reader: BufReader<Socket>,
    reused: bool,
}

impl Conn {
    fn open(addr: SocketAddr, deadline: Instant) -> Result<Conn> {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let stream = TcpStream::connect_timeout(&addr, left).map_err(|e| io_error(e, "connecting to the bridge"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| io_error(e, "setting TCP_NODELAY"))?;
        Ok(Conn {
            reader: BufReader::with_capacity(
                64 * 1024,
                Socket {
                    stream,
                    deadline: None,
                    idle_timeout: None,
                    idle_deadline: None,
                    applied_read: None,
                },
            ),
            reused: false,
        })
    }

    /// A handle that can shut the socket down from another thread.
    pub fn aborter(&self) -> Result<Aborter> {
        let s = self
            .reader
            .get_ref()
            .stream
            .try_clone()
            .map_err(|e| io_error(e, "cloning socket"))?;
        Ok(Aborter(Arc::new(s), Owner::here()))
    }

    pub fn socket_mut(&mut self) -> &mut Socket {
        self.reader.get_mut()
    }

    /// True when the peer has closed (or sent unexpected bytes on) an idle connection.
    fn is_stale(&self) -> bool {
        let s = &self.reader.get_ref().stream;
        if !self.reader.buffer().is_empty() || s.set_nonblocking(true).is_err() {
            return true;
        }
        let mut probe = [0u8; 1];
        let stale = !matches!(s.peek(&mut probe), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock);
        stale || s.set_nonblocking(false).is_err()
    }
}

/// Shuts a connection's socket down, waking any thread blocked on it. In a forked child it
/// does nothing: the socket is shared with the parent, whose call it would break.
#[derive(Clone)]
pub struct Aborter(Arc<TcpStream>, Owner);

impl Aborter {
    pub fn abort(&self) {
        if !self.1.is_foreign() {
            let _ = self.0.shutdown(Shutdown::Both);
        }
    }
}

/// Where a call in progress puts its socket so that another thread can abort it. Once
/// aborted, a socket put there later is shut down at once, so an abort never misses a call
/// that was just connecting.
#[derive(Default)]
pub struct AbortSlot {
    state: Mutex<(bool, Option<Aborter>)>,
}

impl AbortSlot {
    pub fn set(&self, a: Aborter) {
        let mut st = self.state.lock();
        if st.0 {
            a.abort();
        } else {
            st.1 = Some(a);
        }
    }

    pub fn clear(&self) {
        self.state.lock().1 = None;
    }

    pub fn abort(&self) {
        let mut st = self.state.lock();
        st.0 = true;
        if let Some(a) = st.1.take() {
            a.abort();
        }
    }

    pub fn is_aborted(&self) -> bool {
        self.state.lock().0
    }
}

/// A failed exchange, with the request's connection when the head did not come in time.
pub type Unanswered = (Error, Option<Box<Pending>>);

/// A request sent whose response head did not come in time (the peer may be stopped, not
/// dead): the connection, to go on waiting for the head.
pub struct Pending {
    conn: Conn,
}

impl Pending {
    pub fn aborter(&self) -> Result<Aborter> {
        self.conn.aborter()
    }

    /// Waits for the response head until `deadline`.
    pub fn wait_head(mut self, deadline: Instant) -> Result<(Conn, ResponseHead)> {
        self.conn.socket_mut().set_limits(Some(deadline), None);
        let head = read_head(&mut self.conn.reader).map_err(|(e, _)| e)?;
        Ok((self.conn, head))
    }
}

/// Parsed response head.
pub struct ResponseHead {
    pub status: u16,
    pub content_type: String,
    pub chunked: bool,
    pub content_length: Option<usize>,
    pub close: bool,
}

/// A request to send: path, content type, body, and whether it may be retried on a stale
/// pooled connection.
pub struct Request<'a> {
    pub path: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
    pub idempotent: bool,
    pub timeout_header_ms: Option<u128>,
}

/// The peer: address, pool and credentials.
pub struct Peer {
    addr: SocketAddr,
    host_header: String,
    auth_header: String,
    pool: Mutex<Vec<(Conn, Instant)>>,
}

/// Checks a bridge base URL (`http://host:port`, optional trailing `/`) and returns its
/// `host:port`: a port from 1 to 65535, no path, credentials, spaces or control characters.
pub fn check_base_url(base_url: &str) -> Result<&str> {
    let bad = |why: &str| Err(Error::invalid_argument(format!("bridge URL {base_url:?} {why}")));
    let Some(rest) = base_url.strip_prefix("http://") else {
        return bad("must start with http://");
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority
        .bytes()
        .any(|b| b.is_ascii_control() || b.is_ascii_whitespace() || b"/?#@\\".contains(&b))
    {
        return bad("must be http://host:port with no path, credentials, spaces or control characters");
    }
    let Some((host, port)) = authority.rsplit_once(':') else {
        return bad("has no port");
    };
    if host.is_empty() || host == "[]" {
        return bad("has no host");
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(authority),
        _ => bad("has a port outside 1..65535"),
    }
}

/// Checks a bearer token: not empty, no spaces or control characters (it goes into a header).
pub fn check_token(token: &str) -> Result<()> {
    if token.is_empty() || token.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(Error::invalid_argument(
            "bridge token is empty or contains spaces or control characters",
        ));
    }
    Ok(())
}

impl Peer {
    /// `base_url` is `http://host:port` (as the bridge's ready line or attach options give it).
    pub fn new(base_url: &str, token: &str) -> Result<Peer> {
        let authority = check_base_url(base_url)?;
        let addr = authority
            .to_socket_addrs()
            .map_err(|e| Error::invalid_argument(format!("bridge URL {base_url:?}: {e}")))?
            .next()
            .ok_or_else(|| Error::invalid_argument(format!("bridge URL {base_url:?} resolves to nothing")))?;
        check_token(token)?;
        Ok(Peer {
            addr,
            host_header: authority.to_string(),
            auth_header: format!("Bearer {token}"),
            pool: Mutex::new(Vec::new()),
        })
    }

    /// Sends a request and returns the connection positioned at the response body.
    /// A stale pooled connection is retried once on a fresh one, idempotent requests only.
    /// With `abort`, the socket is put there first, so another thread can cut the call short.
    pub fn send(
        &self,
        req: &Request<'_>,
        deadline: Instant,
        abort: Option<&AbortSlot>,
    ) -> Result<(Conn, ResponseHead)> {
        self.send_or_pending(req, deadline, abort).map_err(|(e, _)| e)
    }

    /// [`Peer::send`], but a request whose response head did not come by `deadline` comes back
    /// with its connection ([`Pending`]), so that someone can go on waiting for the head.
    pub fn send_or_pending(
        &self,
        req: &Request<'_>,
        deadline: Instant,
        abort: Option<&AbortSlot>,
    ) -> Result<(Conn, ResponseHead), Unanswered> {
        let register = |conn: &Conn| -> Result<()> {
            if let Some(slot) = abort {
                slot.set(conn.aborter()?);
            }
            Ok(())
        };
        let pending = |err: Error, conn: Conn, before_response: bool| {
            let keep = err.kind == ErrorKind::Timeout && before_response;
            (err, keep.then(|| Box::new(Pending { conn })))
        };
        let mut conn = self.checkout(deadline).map_err(|e| (e, None))?;
        register(&conn).map_err(|e| (e, None))?;
        match self.exchange(&mut conn, req, deadline) {
            Ok(head) => Ok((conn, head)),
            Err((err, before_response)) if conn.reused && before_response && req.idempotent => {
                let _ = err;
                let mut fresh = Conn::open(self.addr, deadline).map_err(|e| (e, None))?;
                register(&fresh).map_err(|e| (e, None))?;
                match self.exchange(&mut fresh, req, deadline) {
                    Ok(h) => Ok((fresh, h)),
                    Err((e, before)) => Err(pending(e, fresh, before)),
                }
            }
            Err((err, before_response)) => Err(pending(err, conn, before_response)),
        }
    }

    /// Returns a connection whose response was fully read to the pool.
    pub fn checkin(&self, mut conn: Conn) {
        conn.socket_mut().set_limits(None, None);
        let mut pool = self.pool.lock();
        if pool.len() < MAX_POOLED {
            pool.push((conn, Instant::now()));
        }
    }

    fn checkout(&self, deadline: Instant) -> Result<Conn> {
        loop {
            let candidate = self.pool.lock().pop();
            match candidate {
                Some((conn, since)) if since.elapsed() < MAX_IDLE && !conn.is_stale() => {
                    return Ok(Conn { reused: true, ..conn });
                }
                Some(_) => continue,
                None => return Conn::open(self.addr, deadline),
            }
        }
    }

    /// Writes the request and reads the response head. The error's flag says whether the
    /// failure happened before any response byte arrived (so a retry is safe).
    fn exchange(&self, conn: &mut Conn, req: &Request<'_>, deadline: Instant) -> Result<ResponseHead, (Error, bool)> {
        conn.socket_mut().set_limits(Some(deadline), None);
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnect-Protocol-Version: 1\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            req.path,
            self.host_header,
            self.auth_header,
            req.content_type,
            req.body.len()
        );
        if let Some(ms) = req.timeout_header_ms {
            head.push_str(&format!("Connect-Timeout-Ms: {ms}\r\n"));
        }
        head.push_str("\r\n");
        let mut buf = Vec::with_capacity(head.len() + req.body.len());
        buf.extend_from_slice(head.as_bytes());
        buf.extend_from_slice(req.body);
        conn.socket_mut()
            .write_all(&buf)
            .map_err(|e| (io_error(e, "sending request"), true))?;
        read_head(&mut conn.reader)
    }
}

fn read_head(reader: &mut BufReader<Socket>) -> Result<ResponseHead, (Error, bool)> {
    let mut raw: Vec<u8> = Vec::with_capacity(512);
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((io_error(e, "reading response"), raw.is_empty())),
        };
        if available.is_empty() {
            let msg = if raw.is_empty() {
                "connection closed by the bridge before a response"
            } else {
                "connection closed inside a response head"
            };
            return Err((Error::new(ErrorKind::Transport, msg), raw.is_empty()));
        }
        // Consume up to and including the blank line, leaving the body in the buffer.
        let start = raw.len();
        raw.extend_from_slice(available);
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
        match end {
            Some(end) => {
                reader.consume(end - start);
                raw.truncate(end);
                return parse_head(&raw).map_err(|e| (e, false));
            }
            None => {
                let n = available.len();
                reader.consume(n);
                if raw.len() > MAX_HEAD_BYTES {
                    return Err((Error::protocol("response head too large"), false));
                }
            }
        }
    }
}

fn parse_head(raw: &[u8]) -> Result<ResponseHead> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(raw) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Error::protocol("incomplete response head")),
        Err(e) => return Err(Error::protocol(format!("malformed response head: {e}"))),
    }
    let mut head = ResponseHead {
        status: resp.code.unwrap_or(0),
        content_type: String::new(),
        chunked: false,
        content_length: None,
        close: resp.version == Some(0),
    };
    for h in resp.headers.iter() {
        let value = String::from_utf8_lossy(h.value);
        if h.name.eq_ignore_ascii_case("content-type") {
            head.content_type = value.trim().to_ascii_lowercase();
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = value.to_ascii_lowercase().contains("chunked");
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = value
                .trim()
                .parse()
                .map_err(|_| Error::protocol(format!("bad Content-Length {value:?}")))?;
            head.content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("connection") {
            head.close = value.to_ascii_lowercase().contains("close");
        }
    }
    Ok(head)
}

/// The body of a response, framed by Content-Length, chunked encoding, or connection close.
pub enum Body {
    Sized(std::io::Take<BufReader<Socket>>),
    Chunked(chunked_transfer::Decoder<BufReader<Socket>>),
    UntilClose(BufReader<Socket>),
}

impl Body {
    pub fn new(conn: Conn, head: &ResponseHead) -> Body {
        if head.chunked {
            Body::Chunked(chunked_transfer::Decoder::new(conn.reader))
        } else if let Some(n) = head.content_length {
            Body::Sized(conn.reader.take(n as u64))
        } else {
            Body::UntilClose(conn.reader)
        }
    }

    /// Reads the whole body, refusing more than `cap` bytes.
    pub fn read_all(&mut self, cap: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut limited = (&mut *self).take(cap as u64 + 1);
        limited
            .read_to_end(&mut out)
            .map_err(|e| io_error(e, "reading response body"))?;
        if out.len() > cap {
            return Err(Error::protocol(format!("response body exceeds the {cap} byte cap")));
        }
        if let Body::Sized(t) = self {
            if t.limit() > 0 {
                return Err(Error::protocol(format!(
                    "connection closed inside the response body ({} of {} bytes)",
                    out.len(),
                    out.len() as u64 + t.limit()
                )));
            }
        }
        Ok(out)
    }

    /// Gives the connection back when the body was framed and fully consumed.
    pub fn into_conn(self) -> Option<Conn> {
        let reader = match self {
            Body::Sized(t) if t.limit() == 0 => t.into_inner(),
            Body::Chunked(mut d) => {
                // The decoder is done once a read returns 0 (terminal chunk consumed).
                let mut probe = [0u8; 1];
                match d.read(&mut probe) {
                    Ok(0) => d.into_inner(),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(Conn { reader, reused: false })
    }
}

impl Body {
    /// The socket under the body (to change its deadlines).
    pub fn socket_mut(&mut self) -> &mut Socket {
        match self {
            Body::Sized(t) => t.get_mut().get_mut(),
            Body::Chunked(d) => d.get_mut().get_mut(),
            Body::UntilClose(r) => r.get_mut(),
        }
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Body::Sized(r) => r.read(buf),
            Body::Chunked(r) => r.read(buf),
            Body::UntilClose(r) => r.read(buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// A one-shot server that answers each accepted connection's requests with canned bytes.
    fn serve(responses: Vec<Vec<u8>>) -> (String, thread::JoinHandle<Vec<Vec<u8>>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let h = thread::spawn(move || {
            let mut seen = Vec::new();
            for resp in responses {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = vec![0u8; 65536];
                let n = s.read(&mut buf).unwrap();
                seen.push(buf[..n].to_vec());
                s.write_all(&resp).unwrap();
            }
            seen
        });
        (url, h)
    }

    fn req(idempotent: bool) -> Request<'static> {
        Request {
            path: "/sdk.v1.SdkBridgeControlService/Ping",
            content_type: "application/proto",
            body: b"",
            idempotent,
            timeout_header_ms: None,
        }
    }

    #[test]
    fn sends_auth_and_protocol_headers_and_reads_sized_body() {
        let (url, h) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\ncontent-type: application/proto\r\n\r\n\x0a\x04pong".to_vec(),
        ]);
        let peer = Peer::new(&url, "tok").unwrap();
        let (conn, head) = peer
            .send(&req(true), Instant::now() + Duration::from_secs(5), None)
            .unwrap();
        assert_eq!(head.status, 200);
        let mut body = Body::new(conn, &head);
        assert_eq!(body.read_all(1024).unwrap(), b"\x0a\x04pong");
        assert!(body.into_conn().is_some());
        let seen = String::from_utf8(h.join().unwrap().remove(0)).unwrap();
        assert!(seen.starts_with("POST /sdk.v1.SdkBridgeControlService/Ping HTTP/1.1\r\n"));
        assert!(seen.contains("Authorization: Bearer tok\r\n"));
        assert!(seen.contains("Connect-Protocol-Version: 1\r\n"));
    }

    #[test]
    fn chunked_body_decodes() {
        let (url, _h) = serve(vec![
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".to_vec(),
        ]);
        let peer = Peer::new(&url, "t").unwrap();
        let (conn, head) = peer
            .send(&req(true), Instant::now() + Duration::from_secs(5), None)
            .unwrap();
        assert!(head.chunked);
        let mut body = Body::new(conn, &head);
        assert_eq!(body.read_all(1024).unwrap(), b"abcde");
    }

    #[test]
    fn body_cap_and_garbage_head() {
        let (url, _h) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789".to_vec(),
            b"NOT HTTP AT ALL\r\n\r\n".to_vec(),
        ]);
        let peer = Peer::new(&url, "t").unwrap();
        let (conn, head) = peer
            .send(&req(true), Instant::now() + Duration::from_secs(5), None)
            .unwrap();
        assert_eq!(
            Body::new(conn, &head).read_all(4).unwrap_err().kind,
            ErrorKind::Protocol
        );
        let e = peer
            .send(&req(true), Instant::now() + Duration::from_secs(5), None)
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Protocol);
    }

    #[test]
    fn a_sized_body_cut_short_is_an_error() {
        let (url, _h) = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".to_vec()]);
        let peer = Peer::new(&url, "t").unwrap();
        let (conn, head) = peer
            .send(&req(true), Instant::now() + Duration::from_secs(5), None)
            .unwrap();
        let e = Body::new(conn, &head).read_all(1024).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Protocol);
        assert!(e.message.contains("3 of 10 bytes"), "{e}");
    }

    #[test]
    fn an_armed_idle_timeout_bounds_a_trickle() {
        // One byte every 50 ms never lets a read time out; the armed wait still ends.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let h = thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let _ = s.read(&mut [0u8; 4096]);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
            for _ in 0..40 {
                thread::sleep(Duration::from_millis(50));
                if s.write_all(b"x").is_err() {
                    break;
                }
            }
        });
        let peer = Peer::new(&url, "t").unwrap();
        let (mut conn, head) = peer
            .send(&req(false), Instant::now() + Duration::from_secs(5), None)
            .unwrap();
        conn.socket_mut().set_limits(None, Some(Duration::from_millis(300)));
        let mut body = Body::new(conn, &head);
        body.socket_mut().arm_idle();
        let t0 = Instant::now();
        let e = body.read_all(1 << 20).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        drop(body);
        h.join().unwrap();
    }

    #[test]
    fn deadline_bounds_a_silent_peer() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let peer = Peer::new(&url, "t").unwrap();
        let t0 = Instant::now();
        let e = peer
            .send(&req(true), Instant::now() + Duration::from_millis(200), None)
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert!(t0.elapsed() < Duration::from_secs(2));
        drop(l);
    }

    /// A server whose first connection answers one request, then drops the second without a
    /// response (a keep-alive connection the peer closed under us); later connections answer.
    fn stale_after_one() -> (String, thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let h = thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 65536];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(ok).unwrap();
            let _ = s.read(&mut buf).unwrap();
            drop(s);
            if let Ok((mut s, _)) = l.accept() {
                if s.read(&mut buf).unwrap_or(0) > 0 {
                    let _ = s.write_all(ok);
                }
            }
        });
        (url, h)
    }

    fn call(peer: &Peer, idempotent: bool) -> Result<Vec<u8>> {
        let (conn, head) = peer.send(&req(idempotent), Instant::now() + Duration::from_secs(5), None)?;
        let mut body = Body::new(conn, &head);
        let bytes = body.read_all(1024)?;
        if let Some(c) = body.into_conn() {
            peer.checkin(c);
        }
        Ok(bytes)
    }

    #[test]
    fn a_stale_pooled_connection_is_retried_once_for_idempotent_calls_only() {
        let (url, h) = stale_after_one();
        let peer = Peer::new(&url, "t").unwrap();
        assert_eq!(call(&peer, true).unwrap(), b"ok");
        assert_eq!(call(&peer, true).unwrap(), b"ok", "retried on a fresh connection");
        h.join().unwrap();

        let (url, h) = stale_after_one();
        let peer = Peer::new(&url, "t").unwrap();
        assert_eq!(call(&peer, false).unwrap(), b"ok");
        let e = call(&peer, false).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Transport,
            "a non-idempotent call is never replayed: {e}"
        );
        drop(TcpStream::connect(url.trim_start_matches("http://")));
        h.join().unwrap();
    }

    #[test]
    fn bad_urls_and_tokens_are_rejected() {
        assert!(Peer::new("https://127.0.0.1:1", "t").is_err());
        assert!(Peer::new("http://", "t").is_err());
        assert!(Peer::new("http://127.0.0.1:1/x", "t").is_err());
        assert!(Peer::new("http://127.0.0.1:1", "").is_err());
        assert!(Peer::new("http://127.0.0.1:1", "a\nb").is_err());
        assert!(Peer::new("http://[::1]:1", "t").is_ok());
        for bad in [
            "http://127.0.0.1:99999",
            "http://127.0.0.1:0",
            "http://127.0.0.1",
            "http://127.0.0.1:80\r\nX: y",
            "http://u@127.0.0.1:80",
            "http://127.0.0.1:80/x",
            "http://:80",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(check_base_url("http://127.0.0.1:8080/").unwrap(), "127.0.0.1:8080");
    }
}
