//! Connect (HTTP/1.1, binary protobuf) to the bridge: unary calls and server streams.

pub mod frame;
pub mod http;

use std::time::{Duration, Instant};

use prost::Message;

use crate::error::{Error, ErrorKind, Result};
use frame::{Frame, FrameBatch, FrameReader};
pub use http::AbortSlot;
use http::{Aborter, Body, Conn, Peer, Pending, Request, ResponseHead};

/// Cap on a unary response or error body.
const MAX_UNARY_BODY: usize = 64 << 20;

/// Transport settings.
#[derive(Debug, Clone)]
pub struct TransportOptions {
    /// Deadline of one unary call.
    pub unary_timeout: Duration,
    /// A stream that delivers nothing (not even a keepalive) for this long is dead.
    pub stream_idle_timeout: Duration,
    /// Cap on one stream frame's payload.
    pub max_frame_bytes: usize,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            unary_timeout: Duration::from_secs(60),
            // The bridge sends a keepalive after 15 s of silence: 4 missed keepalives = dead.
            stream_idle_timeout: Duration::from_secs(60),
            max_frame_bytes: frame::DEFAULT_MAX_FRAME_BYTES,
        }
    }
}

/// Connect client for one bridge.
pub struct Transport {
    peer: Peer,
    opts: TransportOptions,
}

/// Whether a unary call may be retried transparently on a stale pooled connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    Idempotent,
    NotIdempotent,
}

impl Transport {
    pub fn new(base_url: &str, token: &str, opts: TransportOptions) -> Result<Transport> {
        Ok(Transport {
            peer: Peer::new(base_url, token)?,
            opts,
        })
    }

    pub fn options(&self) -> &TransportOptions {
        &self.opts
    }

    /// One unary RPC: `POST /<service>/<method>` with `application/proto`, done by `deadline`
    /// (default: the unary timeout from now). `abort` lets another thread cut it short.
    pub fn unary<Req: Message, Resp: Message + Default>(
        &self,
        service: &str,
        method: &str,
        req: &Req,
        idempotency: Idempotency,
        deadline: Option<Instant>,
        abort: Option<&AbortSlot>,
    ) -> Result<Resp> {
        let deadline = deadline.unwrap_or_else(|| Instant::now() + self.opts.unary_timeout);
        let timeout = deadline.saturating_duration_since(Instant::now());
        let path = format!("/{service}/{method}");
        let body = req.encode_to_vec();
        let request = Request {
            path: &path,
            content_type: "application/proto",
            body: &body,
            idempotent: idempotency == Idempotency::Idempotent,
            timeout_header_ms: Some(timeout.as_millis()),
        };
        let (conn, head) = self
            .peer
            .send(&request, deadline, abort)
            .map_err(|e| in_call(e, method))?;
        let mut body = Body::new(conn, &head);
        let bytes = body.read_all(MAX_UNARY_BODY).map_err(|e| in_call(e, method));
        if let Some(slot) = abort {
            slot.clear();
        }
        let bytes = bytes?;
        if head.status != 200 {
            return Err(error_response(&head, &bytes));
        }
        if !head.close {
            if let Some(conn) = body.into_conn() {
                self.peer.checkin(conn);
            }
        }
        if !head.content_type.starts_with("application/proto") {
            return Err(Error::protocol(format!(
                "{method}: expected application/proto, got {:?}",
                head.content_type
            )));
        }
        Resp::decode(bytes.as_slice()).map_err(|e| Error::protocol(format!("{method}: undecodable response: {e}")))
    }

    /// Opens a server stream: `POST` of one enveloped request with `application/connect+proto`.
    /// Returns once the response head has arrived (the bridge sends it with the first frame),
    /// which must be by `deadline`; the first read of the stream has the same deadline (see
    /// [`FrameStream::set_deadline`]), later reads the stream idle timeout. `abort` lets another
    /// thread cut the opening short.
    pub fn stream<Req: Message>(
        &self,
        service: &str,
        method: &str,
        req: &Req,
        deadline: Instant,
        abort: Option<&AbortSlot>,
    ) -> Result<FrameStream> {
        self.stream_or_pending(service, method, req, deadline, abort)
            .map_err(|(e, _)| e)
    }

    /// [`Transport::stream`], but when the head did not come by `deadline` the request comes
    /// back with the error ([`PendingStream`]): the peer may still act on it later, and whoever
    /// must undo that can wait for the head.
    pub fn stream_or_pending<Req: Message>(
        &self,
        service: &str,
        method: &str,
        req: &Req,
        deadline: Instant,
        abort: Option<&AbortSlot>,
    ) -> std::result::Result<FrameStream, (Error, Option<Box<PendingStream>>)> {
        let path = format!("/{service}/{method}");
        let body = frame::encode(&req.encode_to_vec());
        let request = Request {
            path: &path,
            content_type: "application/connect+proto",
            body: &body,
            idempotent: false,
            timeout_header_ms: None,
        };
        match self.peer.send_or_pending(&request, deadline, abort) {
            Ok((conn, head)) => self.opened(conn, head, method, deadline).map_err(|e| (e, None)),
            Err((e, pending)) => {
                let pending = pending.map(|pending| {
                    Box::new(PendingStream {
                        pending: *pending,
                        method: method.to_string(),
                        max_frame_bytes: self.opts.max_frame_bytes,
                        idle: self.opts.stream_idle_timeout,
                    })
                });
                Err((in_call(e, method), pending))
            }
        }
    }

    fn opened(&self, conn: Conn, head: ResponseHead, method: &str, deadline: Instant) -> Result<FrameStream> {
        open_stream(
            conn,
            head,
            method,
            deadline,
            self.opts.stream_idle_timeout,
            self.opts.max_frame_bytes,
        )
    }
}

/// A stream request whose head is still to come (see [`Transport::stream_or_pending`]).
pub struct PendingStream {
    pending: Pending,
    method: String,
    max_frame_bytes: usize,
    idle: Duration,
}

impl PendingStream {
    pub fn abort_handle(&self) -> Result<Aborter> {
        self.pending.aborter()
    }

    /// Waits for the head until `deadline` and opens the stream.
    pub fn wait(self, deadline: Instant) -> Result<FrameStream> {
        let (conn, head) = self.pending.wait_head(deadline)?;
        open_stream(conn, head, &self.method, deadline, self.idle, self.max_frame_bytes)
    }
}

/// A stream whose head came: its error body, or its frames.
fn open_stream(
    mut conn: Conn,
    head: ResponseHead,
    method: &str,
    deadline: Instant,
    idle: Duration,
    max_frame_bytes: usize,
) -> Result<FrameStream> {
    let aborter = conn.aborter()?;
    if head.status != 200 {
        let bytes = Body::new(conn, &head).read_all(MAX_UNARY_BODY)?;
        return Err(error_response(&head, &bytes));
    }
    if !head.content_type.starts_with("application/connect+proto") {
        return Err(Error::protocol(format!(
            "{method}: expected application/connect+proto, got {:?}",
            head.content_type
        )));
    }
    conn.socket_mut().set_limits(Some(deadline), Some(idle));
    Ok(FrameStream {
        reader: FrameReader::new(Body::new(conn, &head), max_frame_bytes),
        aborter,
        method: method.to_string(),
    })
}

/// Adds the RPC name to transport-level errors so they say what they were doing.
fn in_call(mut e: Error, method: &str) -> Error {
    if matches!(e.kind, ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::Protocol) {
        e.message = format!("{method}: {}", e.message);
    }
    e
}

/// Turns a non-200 response into an error: a Connect JSON error body when there is one,
/// otherwise the HTTP status mapping (the bridge's 404/415/405 have empty bodies).
fn error_response(head: &ResponseHead, body: &[u8]) -> Error {
    if head.content_type.starts_with("application/json") {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
            if v.get("code").is_some() {
                return Error::from_connect_json(&v, Some(head.status));
            }
        }
    }
    Error::from_http_status(head.status, body)
}

/// A server stream's frames. `abort_handle()` can wake a blocked reader from any thread.
pub struct FrameStream {
    reader: FrameReader<Body>,
    aborter: Aborter,
    method: String,
}

impl FrameStream {
    /// The next message payload, or `None` after a clean end-of-stream frame.
    pub fn next_payload(&mut self) -> Result<Option<Vec<u8>>> {
        self.reader.get_mut().socket_mut().arm_idle();
        match self.reader.next_frame() {
            Ok(Frame::Message(p)) => Ok(Some(p)),
            Ok(Frame::End) => Ok(None),
            Err(e) => Err(in_call(e, &self.method)),
        }
    }

    /// Every complete frame that has arrived, reading only when none has (see
    /// [`FrameReader::next_batch`]).
    pub fn next_batch(&mut self) -> Result<FrameBatch> {
        self.reader.get_mut().socket_mut().arm_idle();
        self.reader.next_batch().map_err(|e| in_call(e, &self.method))
    }

    /// The next message decoded as `T`.
    pub fn next_message<T: Message + Default>(&mut self) -> Result<Option<T>> {
        match self.next_payload()? {
            Some(p) => T::decode(p.as_slice())
                .map(Some)
                .map_err(|e| Error::protocol(format!("{}: undecodable frame: {e}", self.method))),
            None => Ok(None),
        }
    }

    pub fn abort_handle(&self) -> Aborter {
        self.aborter.clone()
    }

    /// Sets (or with `None` lifts) an absolute deadline for the reads to come; the stream idle
    /// timeout applies either way.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        let idle = self.reader.get_mut().socket_mut().idle_timeout();
        self.set_limits(deadline, idle);
    }

    /// Sets both the absolute deadline and the idle timeout of the reads to come.
    pub fn set_limits(&mut self, deadline: Option<Instant>, idle: Option<Duration>) {
        self.reader.get_mut().socket_mut().set_limits(deadline, idle);
    }
}

impl Drop for FrameStream {
    fn drop(&mut self) {
        // A half-read stream's connection cannot be reused: close it now.
        self.aborter.abort();
    }
}
