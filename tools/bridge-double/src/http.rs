//! Minimal HTTP/1.1: server-side request reading and response writing, and a tiny client for callbacks.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Request {
    pub method: String,
    pub path: String,
    /// Lower-cased header names, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl Request {
    /// The first header with this (lower-case) name, like Node.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

pub enum ReadOutcome {
    Request(Request),
    /// The peer closed the connection (or an idle timeout) before a request started.
    Closed,
    /// Malformed request head: answer 400 and close.
    Bad,
}

const MAX_HEAD: usize = 64 * 1024;

/// Reads one request (head + body) from a buffered connection.
pub fn read_request<R: Read>(r: &mut BufReader<R>) -> io::Result<ReadOutcome> {
    let mut head: Vec<u8> = Vec::new();
    loop {
        let n = {
            let buf = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if head.is_empty() && is_timeout(&e) => return Ok(ReadOutcome::Closed),
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(ReadOutcome::Closed);
            }
            // take up to and including the end of the head if present
            let mut take = buf.len();
            let start = head.len().saturating_sub(3);
            head.extend_from_slice(buf);
            if let Some(pos) = find_head_end(&head[start..]) {
                let end = start + pos + 4;
                take -= head.len() - end;
                head.truncate(end);
                r.consume(take);
                break;
            }
            take
        };
        r.consume(n);
        if head.len() > MAX_HEAD {
            return Ok(ReadOutcome::Bad);
        }
    }
    let mut hdrs = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut hdrs);
    match req.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Ok(ReadOutcome::Bad),
    }
    let method = req.method.unwrap_or("").to_string();
    let path = req.path.unwrap_or("").to_string();
    let version = req.version.unwrap_or(1);
    let mut headers = Vec::new();
    for h in req.headers.iter() {
        let v = String::from_utf8_lossy(h.value).trim().to_string();
        headers.push((h.name.to_ascii_lowercase(), v));
    }
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let conn = find("connection").unwrap_or_default().to_ascii_lowercase();
    let keep_alive = if version == 0 {
        conn.contains("keep-alive")
    } else {
        !conn.contains("close")
    };
    let chunked = find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        let mut out = Vec::new();
        chunked_transfer::Decoder::new(&mut *r).read_to_end(&mut out)?;
        out
    } else if let Some(cl) = find("content-length") {
        let Ok(n) = cl.parse::<usize>() else {
            return Ok(ReadOutcome::Bad);
        };
        let mut out = vec![0u8; n];
        r.read_exact(&mut out)?;
        out
    } else {
        Vec::new()
    };
    Ok(ReadOutcome::Request(Request {
        method,
        path,
        headers,
        body,
        keep_alive,
    }))
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n")
}

pub fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        499 => "Client Closed Request",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// A complete response with a Content-Length body (unary answers).
pub fn write_full(w: &mut impl Write, status: u16, content_type: &str, body: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(body.len() + 160);
    write!(
        out,
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n",
        reason(status),
        body.len()
    )?;
    out.extend_from_slice(body);
    w.write_all(&out)?;
    w.flush()
}

/// A response with an empty chunked body and no content type (the real bridge's 404/415/405).
pub fn write_empty(w: &mut impl Write, status: u16) -> io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status} {}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        reason(status)
    )?;
    w.flush()
}

/// Head of a chunked streaming response.
pub fn stream_head(content_type: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes()
}

/// Appends `data` as one HTTP chunk.
pub fn push_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A parsed callback URL: `http://host:port/prefix`.
pub struct Url {
    pub host_port: String,
    pub prefix: String,
}

pub fn parse_url(url: &str) -> Result<Url, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("unsupported URL (only http://): {url}"))?;
    let (hp, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if hp.is_empty() {
        return Err(format!("invalid URL: {url}"));
    }
    let host_port = if hp.contains(':') && !hp.ends_with(']') {
        hp.to_string()
    } else {
        format!("{hp}:80")
    };
    Ok(Url {
        host_port,
        prefix: path.trim_end_matches('/').to_string(),
    })
}

pub struct ClientResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The response line said HTTP/1.0 (no keep-alive by default).
    pub http10: bool,
}

/// POSTs a JSON body the way connect-es does in the real bridge: chunked, one chunk, no Content-Length.
pub fn post_connect_json(url: &str, path: &str, token: &str, body: &[u8]) -> io::Result<ClientResponse> {
    let u = parse_url(url).map_err(io::Error::other)?;
    let mut req = format!(
        "POST {}{path} HTTP/1.1\r\naccept-encoding: identity\r\nauthorization: Bearer {token}\r\nconnect-protocol-version: 1\r\ncontent-type: application/json\r\nuser-agent: cursor-sdk-bridge-double\r\nHost: {}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
        u.prefix, u.host_port
    )
    .into_bytes();
    push_chunk(&mut req, body);
    req.extend_from_slice(LAST_CHUNK);
    send_raw(&u.host_port, &req)
}

/// A kept-alive callback client (the `toolseq` scenario): one connection reused while the server
/// keeps it open (`HTTP/1.1` without `Connection: close`); otherwise a new connection per call,
/// which is what a client that honours `Connection: close` / HTTP/1.0 would do too.
pub struct KeepAliveClient {
    url: Url,
    conn: Option<BufReader<TcpStream>>,
    /// How many TCP connections were opened.
    pub connects: usize,
}

impl KeepAliveClient {
    pub fn new(url: &str) -> io::Result<Self> {
        Ok(Self {
            url: parse_url(url).map_err(io::Error::other)?,
            conn: None,
            connects: 0,
        })
    }

    /// POSTs a JSON body (chunked, like `post_connect_json`) and reads the response.
    pub fn post_json(&mut self, path: &str, token: &str, body: &[u8]) -> io::Result<ClientResponse> {
        let mut req = format!(
            "POST {}{path} HTTP/1.1\r\naccept-encoding: identity\r\nauthorization: Bearer {token}\r\nconnect-protocol-version: 1\r\ncontent-type: application/json\r\nuser-agent: cursor-sdk-bridge-double\r\nHost: {}\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
            self.url.prefix, self.url.host_port
        )
        .into_bytes();
        push_chunk(&mut req, body);
        req.extend_from_slice(LAST_CHUNK);
        // A reused connection the host closed meanwhile fails at once: retry once on a new one.
        let (r, resp) = match self.conn.take() {
            Some(mut r) => match Self::exchange(&mut r, &req) {
                Ok(resp) => (r, resp),
                Err(_) => self.fresh(&req)?,
            },
            None => self.fresh(&req)?,
        };
        let close = resp
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"))
            || resp.http10;
        if !close {
            self.conn = Some(r);
        }
        Ok(resp)
    }

    fn fresh(&mut self, req: &[u8]) -> io::Result<(BufReader<TcpStream>, ClientResponse)> {
        let s = TcpStream::connect(&self.url.host_port)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(120)))?;
        self.connects += 1;
        let mut r = BufReader::new(s);
        let resp = Self::exchange(&mut r, req)?;
        Ok((r, resp))
    }

    fn exchange(r: &mut BufReader<TcpStream>, req: &[u8]) -> io::Result<ClientResponse> {
        r.get_mut().write_all(req)?;
        read_response(r)
    }
}

/// Writes raw request bytes to `host_port` and reads one response.
pub fn send_raw(host_port: &str, raw: &[u8]) -> io::Result<ClientResponse> {
    let mut s = TcpStream::connect(host_port)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    s.write_all(raw)?;
    s.flush()?;
    read_response(&mut BufReader::new(s))
}

pub fn read_response<R: Read>(r: &mut BufReader<R>) -> io::Result<ClientResponse> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed before response head",
            ));
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let mut hdrs = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut hdrs);
    resp.parse(&head).map_err(io::Error::other)?;
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).trim().to_string(),
            )
        })
        .collect();
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        chunked_transfer::Decoder::new(&mut *r).read_to_end(&mut body)?;
    } else if let Some(cl) = find("content-length") {
        body.resize(cl.parse::<usize>().map_err(io::Error::other)?, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok(ClientResponse {
        status,
        headers,
        body,
        http10,
    })
}
