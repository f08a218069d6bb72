//! The link to the bridge: the current connection and its generation, how every RPC goes over
//! it (deadlines, retries, abort), and what a failure means. The client, its agents and its runs
//! all call through here, so bridge death, fork and shutdown are decided in one place.
//!
//! Policy after the bridge dies: the call that finds it dead fails with `BridgeExited` (exit
//! status and stderr tail) and the dead connection is forgotten; the next call the user makes on
//! the client or an agent starts a new bridge ([`Link::connect`]). Nothing else launches: a run
//! keeps the connection it started on for its recovery and cancel, and explaining a failure only
//! looks at that connection. Agents live in the bridge's memory, so after a new launch they must
//! be resumed; a run of the old bridge ends with `BridgeExited`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::bridge::ManagedBridge;
use crate::error::{Error, ErrorKind, Result};
use crate::fork::Owner;
use crate::proto;
use crate::transport::{AbortSlot, FrameStream, Idempotency, Transport};

pub(crate) const CONTROL: &str = "sdk.v1.SdkBridgeControlService";
pub(crate) const AGENTS: &str = "sdk.v1.SdkAgentService";
pub(crate) const CATALOG: &str = "sdk.v1.SdkCursorService";

/// How long a stop waits for the bridge to answer `Shutdown` before it signals the process.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Read-only RPCs: retried (with `maxRetries`) on unavailable, rate-limited and lost
/// connections. The official SDK's allow-list, less `WaitLiveRun` (which waits for a run).
const READ_ONLY: [&str; 13] = [
    "Ping",
    "GetVersion",
    "GetAgent",
    "ListAgents",
    "GetRun",
    "ListRuns",
    "GetRunConversation",
    "Me",
    "ListModels",
    "ListRepositories",
    "ListAgentMessages",
    "ListArtifacts",
    "GetUsage",
];
/// Backoff between retries: 250 ms doubling to 2 s, with jitter; a server's `retry_after` is
/// honoured up to 10 s. Every retry stays inside the call's own deadline.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(2);
const RETRY_AFTER_CAP: Duration = Duration::from_secs(10);

/// Says why a bridge we did not launch but can watch (the shared one) is gone, once it is.
pub(crate) type Watch = Box<dyn Fn() -> Option<Error> + Send + Sync>;

/// A live connection: the transport and the bridge we launched (if any).
pub(crate) struct Connection {
    pub transport: Transport,
    bridge: Option<ManagedBridge>,
    watch: Option<Watch>,
}

impl Connection {
    pub fn new(transport: Transport, bridge: Option<ManagedBridge>) -> Connection {
        Connection {
            transport,
            bridge,
            watch: None,
        }
    }

    /// A connection to a bridge someone else stops, whose death `watch` reports.
    pub fn watched(transport: Transport, watch: Watch) -> Connection {
        Connection {
            transport,
            bridge: None,
            watch: Some(watch),
        }
    }

    pub fn bridge(&self) -> Option<&ManagedBridge> {
        self.bridge.as_ref()
    }

    fn dead(&self) -> Option<Error> {
        match (&self.bridge, &self.watch) {
            (Some(b), _) => b.exit_error(),
            (None, Some(w)) => w(),
            (None, None) => None,
        }
    }

    /// Stops a launched bridge: `Shutdown` (at most [`SHUTDOWN_GRACE`]), then signals.
    pub fn stop(&self) {
        if let Some(bridge) = &self.bridge {
            let shutdown = || {
                self.transport
                    .unary::<_, proto::ShutdownResponse>(
                        CONTROL,
                        "Shutdown",
                        &proto::ShutdownRequest { grace_seconds: 0 },
                        Idempotency::NotIdempotent,
                        Some(Instant::now() + SHUTDOWN_GRACE),
                        None,
                    )
                    .is_ok()
            };
            bridge.stop(Some(&shutdown));
        }
    }
}

/// Per-call settings beyond the request itself.
#[derive(Default)]
pub(crate) struct CallOpts<'a> {
    /// Absolute deadline of the whole call, retries included (default: the request timeout).
    pub deadline: Option<Instant>,
    /// Lets another thread abort the call.
    pub abort: Option<&'a AbortSlot>,
}

pub(crate) struct Link {
    owner: Owner,
    closed: AtomicBool,
    slot: Mutex<Option<Arc<Connection>>>,
    /// Serialises launches without holding `slot`, so a slow start never blocks a shutdown or
    /// a call that needs no bridge.
    launching: Mutex<()>,
    /// Runs this client is streaming right now: run id → agent id.
    live_runs: Mutex<HashMap<String, String>>,
    /// The sockets of timed-out sends still watched (`send_watch.rs`), cut at shutdown.
    watches: Mutex<Vec<Arc<AbortSlot>>>,
    pub unary_timeout: Duration,
    pub max_retries: u32,
    workspace: String,
    api_key: Option<String>,
}

impl Link {
    pub fn new(unary_timeout: Duration, max_retries: u32, workspace: String, api_key: Option<String>) -> Link {
        Link {
            owner: Owner::here(),
            closed: AtomicBool::new(false),
            slot: Mutex::new(None),
            launching: Mutex::new(()),
            live_runs: Mutex::new(HashMap::new()),
            watches: Mutex::new(Vec::new()),
            unary_timeout,
            max_retries,
            workspace,
            api_key,
        }
    }

    /// Fails at once in a forked child and after shutdown (checked before any lock, which a
    /// thread that does not exist in a child may have held at fork time).
    pub fn check(&self) -> Result<()> {
        self.owner.check("client")?;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::usage("the client was shut down"));
        }
        Ok(())
    }

    /// Fails at once in a forked child (what a run checks: its queued events stay readable
    /// after a shutdown).
    pub fn check_process(&self) -> Result<()> {
        self.owner.check("client")
    }

    pub fn is_foreign(&self) -> bool {
        self.owner.is_foreign()
    }

    /// The key to send: the explicit one, else the client's; never empty.
    pub fn key(&self, explicit: &str) -> String {
        if explicit.is_empty() {
            self.api_key.clone().unwrap_or_default()
        } else {
            explicit.to_string()
        }
    }

    pub fn default_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The `cwd` for management calls: the given one, else the workspace (the bridge scopes
    /// store reads by cwd, so agents made elsewhere are only found with theirs).
    pub fn cwd_or_workspace(&self, cwd: &str) -> String {
        if cwd.is_empty() {
            self.workspace.clone()
        } else {
            cwd.to_string()
        }
    }

    /// The connection in use, without launching and without checking liveness.
    pub fn existing(&self) -> Option<Arc<Connection>> {
        self.slot.lock().clone()
    }

    /// The live connection, opening one with `open` when there is none.
    pub fn connect(&self, open: impl FnOnce() -> Result<Connection>) -> Result<Arc<Connection>> {
        self.check()?;
        if let Some(conn) = self.live()? {
            return Ok(conn);
        }
        let _launch = self.launching.lock();
        self.check()?;
        if let Some(conn) = self.live()? {
            return Ok(conn);
        }
        let conn = Arc::new(open()?);
        let mut slot = self.slot.lock();
        if self.closed.load(Ordering::Acquire) {
            drop(slot);
            conn.stop();
            return Err(Error::usage("the client was shut down"));
        }
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// The connection in the slot if its bridge lives. A dead one fails this call (and is
    /// forgotten, so the next `connect` launches anew).
    fn live(&self) -> Result<Option<Arc<Connection>>> {
        let conn = self.slot.lock().clone();
        match conn {
            None => Ok(None),
            Some(conn) => match conn.dead() {
                None => Ok(Some(conn)),
                Some(err) => Err(self.forget(&conn, err)),
            },
        }
    }

    /// Drops `conn` from the slot (if still there) because its bridge died with `err`.
    fn forget(&self, conn: &Arc<Connection>, err: Error) -> Error {
        let mut slot = self.slot.lock();
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            slot.take();
        }
        err
    }

    /// A failed call's error, or `BridgeExited` if the failure was the bridge dying.
    pub fn explain(&self, conn: &Arc<Connection>, e: Error) -> Error {
        if !matches!(e.kind, ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::Protocol)
            || (conn.bridge.is_none() && conn.watch.is_none())
        {
            return e;
        }
        // The bridge may take a moment to be reaped after its socket closed.
        for _ in 0..20 {
            if let Some(dead) = conn.dead() {
                return self.forget(conn, dead);
            }
            if e.kind != ErrorKind::Transport {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        e
    }

    /// One unary RPC on `conn`. Read-only RPCs (and keyed creates) are retried up to
    /// `max_retries` times on unavailable, rate-limited and lost connections, within the
    /// call's deadline.
    pub fn unary<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        conn: &Arc<Connection>,
        service: &str,
        method: &str,
        req: &Req,
        idempotency: Idempotency,
        opts: CallOpts<'_>,
    ) -> Result<Resp> {
        self.owner.check("client")?;
        let deadline = opts.deadline.unwrap_or_else(|| Instant::now() + self.unary_timeout);
        let retries = if is_retryable_rpc(method, idempotency) {
            self.max_retries
        } else {
            0
        };
        let mut attempt = 0;
        loop {
            let outcome = conn
                .transport
                .unary(service, method, req, idempotency, Some(deadline), opts.abort)
                .map_err(|e| self.explain(conn, e));
            let err = match outcome {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let aborted = opts.abort.is_some_and(AbortSlot::is_aborted);
            if attempt >= retries || aborted || !worth_retrying(&err) {
                return Err(err);
            }
            let pause = backoff(attempt, err.retry_after());
            if Instant::now() + pause >= deadline {
                return Err(err);
            }
            crate::log::emit(
                crate::log::Level::Info,
                &format!("{method}: {err}; retrying in {pause:.2?}"),
            );
            std::thread::sleep(pause);
            attempt += 1;
        }
    }

    /// Opens a server stream on `conn`; the head (and the first read) must come by `deadline`.
    pub fn stream<Req: prost::Message>(
        &self,
        conn: &Arc<Connection>,
        service: &str,
        method: &str,
        req: &Req,
        opts: CallOpts<'_>,
    ) -> Result<FrameStream> {
        self.owner.check("client")?;
        let deadline = opts.deadline.unwrap_or_else(|| Instant::now() + self.unary_timeout);
        conn.transport
            .stream(service, method, req, deadline, opts.abort)
            .map_err(|e| self.explain(conn, e))
    }

    /// Stops a launched bridge and refuses later calls. Idempotent. In a forked child it only
    /// refuses: the bridge and the threads belong to the parent.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        if self.is_foreign() {
            if let Some(mut slot) = self.slot.try_lock() {
                std::mem::forget(slot.take());
            }
            return;
        }
        let conn = self.slot.lock().take();
        if let Some(conn) = conn {
            conn.stop();
        }
        for slot in self.watches.lock().drain(..) {
            slot.abort();
        }
    }

    /// An abort slot for the watch of a send of `agent_id` that timed out; shutdown aborts it.
    /// While it is watched, the agent counts as streamed by this client (a send meanwhile is
    /// plainly busy: its run may be live in the bridge).
    pub fn watch_slot(&self, agent_id: &str) -> Arc<AbortSlot> {
        let slot = Arc::new(AbortSlot::default());
        if self.closed.load(Ordering::Acquire) {
            slot.abort();
        }
        self.watches.lock().push(slot.clone());
        self.track_live_run(&watch_key(&slot), agent_id, true);
        slot
    }

    pub fn unwatch(&self, slot: &Arc<AbortSlot>) {
        self.watches.lock().retain(|s| !Arc::ptr_eq(s, slot));
        self.track_live_run(&watch_key(slot), "", false);
    }

    /// Records whether this client streams a run right now.
    pub fn track_live_run(&self, run_id: &str, agent_id: &str, live: bool) {
        let mut runs = self.live_runs.lock();
        if live {
            runs.insert(run_id.to_string(), agent_id.to_string());
        } else {
            runs.remove(run_id);
        }
    }

    pub fn is_live_run(&self, run_id: &str) -> bool {
        self.live_runs.lock().contains_key(run_id)
    }

    /// Whether this client streams a run of `agent_id` right now.
    pub fn streams_agent(&self, agent_id: &str) -> bool {
        self.live_runs.lock().values().any(|a| a == agent_id)
    }
}

/// The stand-in run id of a watched send (never a real run id).
fn watch_key(slot: &Arc<AbortSlot>) -> String {
    format!("(unanswered send {:p})", Arc::as_ptr(slot))
}

fn is_retryable_rpc(method: &str, idempotency: Idempotency) -> bool {
    idempotency == Idempotency::Idempotent && (READ_ONLY.contains(&method) || method == "CreateAgent")
}

fn worth_retrying(e: &Error) -> bool {
    matches!(
        e.kind,
        ErrorKind::Unavailable | ErrorKind::RateLimited | ErrorKind::Transport
    )
}

/// The pause before retry `attempt + 1`: exponential with jitter (half to all of the step), or
/// the server's `retry_after` when that is longer (capped).
fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    let step = BACKOFF_BASE.saturating_mul(1u32 << attempt.min(8)).min(BACKOFF_CAP);
    let mut r = [0u8; 2];
    let _ = getrandom::fill(&mut r);
    let jitter = f64::from(u16::from_le_bytes(r)) / f64::from(u16::MAX);
    let pause = step.mul_f64(0.5 + 0.5 * jitter);
    match retry_after {
        Some(ra) => pause.max(ra.min(RETRY_AFTER_CAP)),
        None => pause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_rpcs_and_keyed_creates_are_retried() {
        assert!(is_retryable_rpc("ListAgents", Idempotency::Idempotent));
        assert!(is_retryable_rpc("CreateAgent", Idempotency::Idempotent));
        assert!(!is_retryable_rpc("CreateAgent", Idempotency::NotIdempotent));
        assert!(!is_retryable_rpc("Send", Idempotency::Idempotent));
        assert!(!is_retryable_rpc("CancelRun", Idempotency::Idempotent));
        assert!(!is_retryable_rpc("WaitLiveRun", Idempotency::Idempotent));
    }

    #[test]
    fn backoff_grows_is_jittered_capped_and_honours_retry_after() {
        for attempt in 0..12 {
            let step = BACKOFF_BASE.saturating_mul(1 << attempt.min(8)).min(BACKOFF_CAP);
            let b = backoff(attempt, None);
            assert!(b >= step / 2 && b <= step, "attempt {attempt}: {b:?} vs {step:?}");
        }
        assert_eq!(backoff(0, Some(Duration::from_secs(3))), Duration::from_secs(3));
        assert_eq!(backoff(0, Some(Duration::from_secs(300))), RETRY_AFTER_CAP);
        assert!(backoff(3, Some(Duration::from_millis(1))) >= Duration::from_secs(1));
    }

    /// A server that answers 503 to the first `failures` requests, then pongs; one request a
    /// connection. Returns its URL and a counter of requests seen.
    fn flaky_server(failures: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for stream in l.incoming() {
                let Ok(mut s) = stream else { return };
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let reply: &[u8] = if n < failures {
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\nContent-Length: 6\r\nConnection: close\r\n\r\n\x0a\x04pong"
                };
                let _ = s.write_all(reply);
            }
        });
        (url, seen)
    }

    fn link_to(url: &str, retries: u32) -> (Link, Arc<Connection>) {
        let transport = Transport::new(url, "t", crate::transport::TransportOptions::default()).unwrap();
        (
            Link::new(Duration::from_secs(10), retries, "/".into(), None),
            Arc::new(Connection::new(transport, None)),
        )
    }

    #[test]
    fn read_only_calls_are_retried_on_unavailable_and_others_are_not() {
        let (url, seen) = flaky_server(2);
        let (link, conn) = link_to(&url, 3);
        let t0 = Instant::now();
        let r: proto::PingResponse = link
            .unary(
                &conn,
                CONTROL,
                "Ping",
                &proto::PingRequest {},
                Idempotency::Idempotent,
                CallOpts::default(),
            )
            .unwrap();
        assert_eq!(r.message, "pong");
        assert_eq!(seen.load(Ordering::SeqCst), 3, "two failures, then the answer");
        // Two pauses: 125..250 ms and 250..500 ms.
        assert!(t0.elapsed() >= Duration::from_millis(375), "{:?}", t0.elapsed());

        let (url, seen) = flaky_server(1);
        let (link, conn) = link_to(&url, 3);
        let req = proto::CancelRunRequest::default();
        let e = link
            .unary::<_, proto::CancelRunResponse>(
                &conn,
                AGENTS,
                "CancelRun",
                &req,
                Idempotency::Idempotent,
                CallOpts::default(),
            )
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert_eq!(seen.load(Ordering::SeqCst), 1, "CancelRun is never retried");

        let (url, seen) = flaky_server(5);
        let (link, conn) = link_to(&url, 0);
        let e = link
            .unary::<_, proto::PingResponse>(
                &conn,
                CONTROL,
                "Ping",
                &proto::PingRequest {},
                Idempotency::Idempotent,
                CallOpts::default(),
            )
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert_eq!(seen.load(Ordering::SeqCst), 1, "maxRetries 0: one attempt");

        // Retries stop at the call's deadline.
        let (url, seen) = flaky_server(100);
        let (link, conn) = link_to(&url, 10);
        let t0 = Instant::now();
        let opts = CallOpts {
            deadline: Some(Instant::now() + Duration::from_millis(600)),
            abort: None,
        };
        let e = link
            .unary::<_, proto::PingResponse>(
                &conn,
                CONTROL,
                "Ping",
                &proto::PingRequest {},
                Idempotency::Idempotent,
                opts,
            )
            .unwrap_err();
        // The last failure, or the deadline itself when it falls inside an attempt (a loaded
        // machine); ten retries would pause at least 7 s in all.
        assert!(matches!(e.kind, ErrorKind::Unavailable | ErrorKind::Timeout), "{e:?}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert!(seen.load(Ordering::SeqCst) < 10);
    }

    #[test]
    fn what_is_worth_retrying() {
        assert!(worth_retrying(&Error::new(ErrorKind::Unavailable, "x")));
        assert!(worth_retrying(&Error::new(ErrorKind::RateLimited, "x")));
        assert!(worth_retrying(&Error::new(ErrorKind::Transport, "x")));
        assert!(!worth_retrying(&Error::new(ErrorKind::BridgeExited, "x")));
        assert!(!worth_retrying(&Error::new(ErrorKind::Timeout, "x")));
        assert!(!worth_retrying(&Error::new(ErrorKind::NotFound, "x")));
    }
}
