//! Runs: a live `Send` (or durable `ObserveRun`) stream read by a background thread into a
//! bounded queue, with typed events, waiting, cancelling, status changes and self-recovery.
//!
//! Recovery rule: when the `Send` stream breaks before its `result`/`done` and the bridge is
//! still alive, the reader re-attaches with `ObserveRun` from the start of the durable log and
//! skips what it already delivered: the log's `request` message (which `Send` never shows) and
//! as many `sdk_message` events as were delivered. Deltas and steps are not durable and are not
//! replayed. If `ObserveRun` cannot serve the run, it waits with `WaitLiveRun`, and as a last
//! resort reads the `GetRun` snapshot, so the terminal result is always delivered. It never
//! calls `GetRun`/`ListRuns` on a run that may be live (that detaches the bridge's live handle).
//! If the bridge process died, the run ends at once with a `BridgeExited` error; recovery never
//! launches a bridge (`link.rs`).
//!
//! Bounds: a stream silent for `streamIdleTimeoutMs` is broken; re-attaching takes at most
//! `streamIdleTimeoutMs` (opening `ObserveRun`, whose head the bridge flushes with its 15 s
//! keepalive) plus `requestTimeoutMs` per unary call, and a bridge that does not answer ends the
//! run with that timeout. Every call the reader makes goes through the run's abort slot, so
//! dropping the run or a local cancel wakes it at once.
//!
//! Cancel never blocks: [`Run::cancel`] asks the bridge from a short-lived library thread once the
//! run id is known. If the bridge does not end the stream within `requestTimeoutMs` (it cannot be
//! reached, or the run id never came), the run is ended here with a `Cancelled` error.

use std::any::Any;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prost::bytes::Bytes;
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::link::{CallOpts, Connection, Link, AGENTS};
use crate::proto::{self, run_stream_message::Envelope};
use crate::send_watch::{self, Unanswered};
use crate::struct_json::{self, SdkScan, Span, TextAt};
use crate::transport::frame::FrameBatch;
use crate::transport::{AbortSlot, FrameStream, Idempotency};

/// Batches buffered between the reader thread and the consumer (a batch is what one read
/// brought: one event from a slow stream, hundreds from a fast one, at most ~128 KiB of
/// frames). The reader blocks when the queue is full, which bounds a slow consumer's memory.
const QUEUE_CAPACITY: usize = 32;

/// What an event carries. Values are part of the C ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum EventKind {
    /// An `sdk_message` (type "assistant", "status", "tool_call", …).
    Message = 1,
    /// An `interaction_update` (only with `enableDeltas`).
    Delta = 2,
    /// A conversation `step` (only with `enableSteps`).
    Step = 3,
    /// The run's result.
    Result = 4,
}

/// One event of a run's stream.
///
/// An event read off the wire keeps the frame it came in (a slice of the read's buffer, shared,
/// not copied): its type, offset and a one-block assistant text are borrowed from it, and the
/// JSON payload is built on first use, so a consumer that reads only the type and the text
/// never pays for it (the reader thread has already checked the whole frame). Kept within 128
/// bytes, which the compiler moves without a `memcpy` call.
#[derive(Clone)]
pub struct Event {
    pub kind: EventKind,
    /// No NaN or infinite number in `message` (otherwise the payload is `Null`).
    finite: bool,
    /// An `assistant` message (the stream's common case, asked for several times per event).
    assistant: bool,
    /// The checked frame, or for an event made otherwise its type and offset.
    wire: Bytes,
    r#type: Span,
    offset: Span,
    /// The checked, not yet decoded `sdk_message` Struct (the stream's fast path).
    message: Span,
    /// The value of the Struct's `message` key (found by the reader's check).
    inner: Span,
    /// An assistant message's text when it is one block's string.
    text_at: Span,
    payload: OnceLock<Box<Value>>,
    /// An assistant message's text otherwise, joined from its blocks on first use.
    text: OnceLock<Option<String>>,
}

impl Event {
    pub fn new(kind: EventKind, r#type: impl Into<String>, payload: Value, offset: Option<String>) -> Event {
        let r#type: String = r#type.into();
        let assistant = kind == EventKind::Message && r#type == "assistant";
        // One buffer holds the type then the offset.
        let mut wire = r#type.into_bytes();
        let type_end = wire.len();
        let offset = offset.map(|o| {
            wire.extend_from_slice(o.as_bytes());
            type_end..wire.len()
        });
        Event {
            kind,
            finite: true,
            assistant,
            r#type: Span::of(&(0..type_end)),
            offset: Span::opt(offset.as_ref()),
            wire: Bytes::from(wire),
            message: Span::NONE,
            inner: Span::NONE,
            text_at: Span::NONE,
            payload: OnceLock::from(Box::new(payload)),
            text: OnceLock::new(),
        }
    }

    /// A message event from a checked `sdk_message` frame (`frame`: the frame's bytes, which
    /// the event shares); its payload is decoded on demand.
    pub(crate) fn from_scan(frame: Bytes, scan: &SdkScan) -> Event {
        let (text_at, text) = match scan.text {
            TextAt::One(at) if at.get().is_some_and(|r| !r.is_empty()) => (at, OnceLock::new()),
            TextAt::One(_) | TextAt::Empty => (Span::NONE, OnceLock::from(None)),
            TextAt::Unknown => (Span::NONE, OnceLock::new()),
        };
        Event {
            kind: EventKind::Message,
            finite: scan.finite,
            assistant: scan.assistant,
            r#type: scan.r#type,
            offset: scan.offset,
            message: scan.message,
            inner: scan.inner,
            text_at,
            payload: OnceLock::new(),
            text,
            wire: frame,
        }
    }

    /// A string of `wire`: every span an event keeps of a string is UTF-8 checked when it was
    /// made (by the reader's scan, or a `String`'s).
    fn str_at(&self, span: Span) -> Option<&str> {
        let bytes = &self.wire[span.get()?];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: checked UTF-8, as said above; `wire` is never changed.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    }

    /// The message/update/step type; `"result"` for the result.
    pub fn r#type(&self) -> &str {
        self.str_at(self.r#type).unwrap_or_default()
    }

    /// Resume token of this event in the stream it came from.
    pub fn offset(&self) -> Option<&str> {
        self.str_at(self.offset)
    }

    /// The payload as JSON (snake_case keys inside `sdk_message`, as the bridge sends them).
    pub fn payload(&self) -> &Value {
        self.payload.get_or_init(|| {
            Box::new(match self.message.get() {
                Some(m) if self.finite => struct_json::payload(&self.wire[m]),
                _ => Value::Null,
            })
        })
    }

    pub fn into_payload(mut self) -> Value {
        self.payload();
        self.payload.take().map_or(Value::Null, |p| *p)
    }

    /// The assistant text in this event (text blocks of an `assistant` message, or a
    /// `text-delta`), if any.
    pub fn text(&self) -> Option<&str> {
        if self.assistant {
            return match self.text_at {
                Span::NONE => self.text.get_or_init(|| self.assistant_text()).as_deref(),
                at => self.str_at(at),
            };
        }
        match (self.kind, self.r#type()) {
            (EventKind::Delta, "text-delta") => self.payload().get("text").and_then(Value::as_str),
            _ => None,
        }
    }

    /// An `assistant` message.
    pub(crate) fn is_assistant(&self) -> bool {
        self.assistant
    }

    /// The text as [`Event::text`] gives it, owned (the event forgets a text it had joined).
    pub(crate) fn take_text(&mut self) -> Option<String> {
        if let Some(Some(t)) = self.text.take() {
            return Some(t);
        }
        self.text().map(str::to_string)
    }

    fn assistant_text(&self) -> Option<String> {
        let mut text = String::new();
        match self.message.get() {
            // Straight from the checked wire bytes when the JSON was not asked for. The text
            // is shorter than the message, so one allocation holds it, and a C copy's NUL.
            Some(_) if self.payload.get().is_none() => {
                if let (true, Some(inner)) = (self.finite, self.inner.get()) {
                    let inner = &self.wire[inner];
                    text.reserve_exact(inner.len());
                    struct_json::append_assistant_text(inner, &mut text);
                }
            }
            _ => {
                // `get` chains, not `pointer("/message/content")`, which allocates per token.
                let content = self.payload().get("message")?.get("content")?.as_array()?;
                text = content
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
            }
        }
        Some(text).filter(|t| !t.is_empty())
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        (self.kind, self.r#type(), self.offset()) == (other.kind, other.r#type(), other.offset())
            && self.payload() == other.payload()
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("kind", &self.kind)
            .field("type", &self.r#type())
            .field("payload", self.payload())
            .field("offset", &self.offset())
            .finish()
    }
}

/// A run's lifecycle status, normalised as upstream does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum RunStatus {
    Running = 1,
    Finished = 2,
    Error = 3,
    Cancelled = 4,
    Expired = 5,
}

impl RunStatus {
    /// `RUN_LIFECYCLE_STATUS_FINISHED`, `FINISHED`, `finished` → Finished; creating → Running;
    /// unspecified or unknown → Error.
    pub fn parse(s: &str) -> RunStatus {
        let s = s.trim_start_matches("RUN_LIFECYCLE_STATUS_").to_ascii_lowercase();
        match s.as_str() {
            "running" | "creating" => RunStatus::Running,
            "finished" => RunStatus::Finished,
            "cancelled" | "canceled" => RunStatus::Cancelled,
            "expired" => RunStatus::Expired,
            _ => RunStatus::Error,
        }
    }

    fn from_proto(v: i32) -> RunStatus {
        match proto::RunLifecycleStatus::try_from(v) {
            Ok(s) => RunStatus::parse(s.as_str_name()),
            Err(_) => RunStatus::Error,
        }
    }

    pub fn is_terminal(self) -> bool {
        self != RunStatus::Running
    }

    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Expired => "expired",
        }
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub run_id: String,
    pub agent_id: String,
    pub status: RunStatus,
    /// Final assistant text: the result's, else the assistant text streamed.
    pub text: String,
    pub model: Option<String>,
    pub duration_ms: u64,
    /// Token usage summed over the run's `usage` events (else the result's own).
    pub usage: Option<proto::TokenUsage>,
    pub git: Option<proto::RunGitInfo>,
    pub error_code: Option<String>,
    /// Why the run failed: the result's message, else the last `status` event's.
    pub error_message: Option<String>,
}

impl RunResult {
    /// The result as a JSON object (camelCase keys).
    pub fn to_json(&self) -> Value {
        let usage = self.usage.as_ref().map(|u| {
            json!({"inputTokens": u.input_tokens, "outputTokens": u.output_tokens,
                   "cacheReadTokens": u.cache_read_tokens, "cacheWriteTokens": u.cache_write_tokens,
                   "totalTokens": u.total_tokens, "reasoningTokens": u.reasoning_tokens})
        });
        let git = self.git.as_ref().map(|g| {
            json!({"branches": g.branches.iter().map(|b| json!({"repoUrl": b.repo_url, "branch": b.branch, "prUrl": b.pr_url})).collect::<Vec<_>>()})
        });
        json!({
            "runId": self.run_id, "agentId": self.agent_id, "status": self.status.name(),
            "text": self.text, "model": self.model, "durationMs": self.duration_ms,
            "usage": usage, "git": git, "errorCode": self.error_code, "errorMessage": self.error_message,
        })
    }
}

/// What a poll of the run's events gives.
#[derive(Debug)]
pub enum Next {
    Event(Event),
    /// Nothing arrived within the timeout.
    Timeout,
    /// The stream is over; every event was delivered.
    End,
}

/// What the reader hands over for each frame. A fast stream's items are all `Sdk`: the rare
/// cases are boxed, so that an item (which the consumer's core reads after the reader's wrote
/// it) stays small.
enum Item {
    Event(Box<Event>),
    /// A checked `sdk_message` frame (a span of its batch's data), made an `Event` by the
    /// consumer: the allocations of an event then happen on the thread that frees them.
    Sdk(Span, SdkScan),
    /// Always the last item.
    Failed(Box<Error>),
}

/// What the reader hands over at once: the items of one read, sharing its bytes.
#[derive(Default)]
struct Batch {
    data: Bytes,
    items: Vec<Item>,
}

/// The consumer's end of the queue and the rest of the batch it is taking events from.
struct Inbox {
    rx: Option<Receiver<Batch>>,
    data: Bytes,
    items: std::vec::IntoIter<Item>,
    /// Assistant text taken from this batch and not yet in the summary: it goes there when the
    /// batch's last event (or its failure) is taken, one lock per batch rather than per event.
    text: String,
}

impl Inbox {
    fn flush_text(&mut self, shared: &Shared) {
        if !self.text.is_empty() {
            shared.summary.lock().assistant_text.push_str(&self.text);
            self.text.clear();
        }
    }
}

type StatusListener = Arc<dyn Fn(RunStatus) + Send + Sync>;

/// Everything the reader thread accumulates for `wait()` and status.
#[derive(Default)]
struct Summary {
    run_id: String,
    status: Option<RunStatus>,
    /// The text of the assistant messages taken so far (by the consumer).
    assistant_text: String,
    last_status_message: Option<String>,
    usage: Option<proto::TokenUsage>,
    result: Option<proto::RunStreamResult>,
    failure: Option<Error>,
}

/// Where a run lives: the link and the bridge connection it streams from, the agent it belongs
/// to (id, and for local agents the cwd), and a keep-alive of the client that made it.
#[derive(Clone)]
pub(crate) struct RunCtx {
    pub link: Arc<Link>,
    pub conn: Arc<Connection>,
    /// Held only to keep the client (and its bridge) alive while the run is.
    pub _keep: Arc<dyn Any + Send + Sync>,
    pub agent_id: String,
    pub cwd: String,
}

pub(crate) struct Shared {
    ctx: RunCtx,
    agent_id: String,
    cwd: String,
    /// Deltas were requested: the streamed text comes from them rather than from messages.
    deltas: bool,
    summary: Mutex<Summary>,
    listeners: Mutex<Vec<(u64, StatusListener)>>,
    next_listener: AtomicU64,
    /// The socket of whatever call the reader is in (stream read, recovery RPC).
    abort: AbortSlot,
    closed: AtomicBool,
    finished: AtomicBool,
    /// Set once `cancel` was asked for (it runs once).
    cancel_requested: AtomicBool,
    /// An end decided here (a cancel the bridge did not confirm): the reader delivers it.
    local_end: Mutex<Option<Error>>,
    wake: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

impl Shared {
    fn set_status(&self, status: RunStatus) {
        let changed = {
            let mut s = self.summary.lock();
            let changed = s.status != Some(status);
            s.status = Some(status);
            changed
        };
        if changed {
            let listeners: Vec<StatusListener> = self.listeners.lock().iter().map(|(_, l)| l.clone()).collect();
            for l in listeners {
                l(status);
            }
        }
    }

    /// Calls the waker under its lock, so that once `set_waker(None)` returned no call of the
    /// old waker is running (a freed run's descriptor is never written).
    fn wake(&self) {
        if let Some(w) = self.wake.lock().as_ref() {
            w();
        }
    }

    fn run_id(&self) -> String {
        self.summary.lock().run_id.clone()
    }

    /// Asks the bridge to cancel, then makes sure the stream ends within the request timeout.
    fn cancel_now(&self) {
        let link = &self.ctx.link;
        let deadline = Instant::now() + link.unary_timeout;
        let ended =
            || self.finished.load(Ordering::Acquire) || self.summary.lock().status.is_some_and(RunStatus::is_terminal);
        // A Send names its run in its first frame; wait for it (bounded).
        let run_id = loop {
            if ended() {
                return;
            }
            let id = self.run_id();
            if !id.is_empty() {
                break id;
            }
            if Instant::now() >= deadline {
                return self.end_locally(Error::new(
                    ErrorKind::Cancelled,
                    "cancelled before the bridge named the run; the run was stopped here",
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let req = proto::CancelRunRequest {
            run_id,
            agent_id: Some(self.agent_id.clone()).filter(|a| !a.is_empty()),
        };
        let sent = link.unary::<_, proto::CancelRunResponse>(
            &self.ctx.conn,
            AGENTS,
            "CancelRun",
            &req,
            Idempotency::Idempotent,
            CallOpts {
                deadline: Some(deadline),
                abort: None,
            },
        );
        if let Err(e) = sent {
            if !ended() {
                self.end_locally(Error::new(
                    ErrorKind::Cancelled,
                    format!("the bridge did not take the cancel ({e}); the run was stopped here"),
                ));
            }
            return;
        }
        // The bridge ends the stream within milliseconds of a cancel it took.
        while !ended() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !ended() {
            self.end_locally(Error::new(
                ErrorKind::Cancelled,
                "the bridge took the cancel but did not end the stream; the run was stopped here",
            ));
        }
    }

    /// Ends the run here with `e`: the reader is woken (its socket shut) and delivers `e`.
    fn end_locally(&self, e: Error) {
        {
            let mut end = self.local_end.lock();
            if end.is_none() {
                *end = Some(e);
            }
        }
        self.abort.abort();
    }
}

/// A run: consume its events, wait for its result, cancel it from any thread.
///
/// Dropping a `Run` stops reading (promptly) but does not cancel the run in the bridge;
/// call [`Run::cancel`] first for that.
pub struct Run {
    shared: Arc<Shared>,
    /// Not dropped in a forked child (see `Drop`).
    inbox: std::mem::ManuallyDrop<Mutex<Inbox>>,
}

/// Which stream the reader reads, which decides what a break means.
enum Phase {
    /// The run's `Send` stream: a break re-attaches once (→ `Recovered`), through ObserveRun,
    /// else WaitLiveRun / GetRun.
    Live,
    /// The durable log (ObserveRun) after the `Send` stream broke; a break now fails the run.
    Recovered(Refill),
    /// An `ObserveRun` stream the user opened: a break fails it.
    Observe,
}

/// Whether a recovered stream still owes the events the break skipped. The bridge gives a late
/// subscriber of a live run only `result` + `done`: that result is held until the log of the
/// then finished run has been replayed once more.
enum Refill {
    /// Nothing held (yet).
    Open,
    /// A result that came while only tailing.
    Held(Box<proto::RunStreamMessage>),
    /// The log was replayed again (or could not be): deliver results as they come.
    Done,
}

/// What a replay of the durable log skips: its `request` message (which `Send` never shows) and
/// the `sdk_message`s already delivered.
#[derive(Default)]
struct Replay {
    request: bool,
    messages: u64,
}

impl Run {
    /// Opens `Send` on `ctx.conn` and returns once its first frame arrived (so send-time errors
    /// surface here), both within the request timeout. A send that times out is watched, so
    /// that a run a stalled bridge starts later is cancelled (`send_watch.rs`).
    pub(crate) fn start_send(ctx: RunCtx, req: &proto::SendRequest) -> Result<Run> {
        ctx.link.check_process()?;
        let deadline = Instant::now() + ctx.link.unary_timeout;
        let stream = match ctx
            .conn
            .transport
            .stream_or_pending(AGENTS, "Send", req, deadline, None)
        {
            Ok(stream) => stream,
            Err((e, pending)) => {
                if let Some(pending) = pending {
                    send_watch::watch(&ctx.link, &ctx.conn, &ctx.agent_id, Unanswered::Head(pending));
                }
                return Err(ctx.link.explain(&ctx.conn, e));
            }
        };
        let deltas = req.options.as_ref().is_some_and(|o| o.enable_deltas);
        Run::start(ctx, stream, Phase::Live, String::new(), deltas)
    }

    /// Opens `ObserveRun` on `ctx.conn`. A run the bridge no longer holds in memory (its agent
    /// was closed, or an earlier bridge made it) is looked up in the store first (`GetRun`,
    /// harmless since such a run cannot be live), then replayed from its durable log. The head
    /// comes with the first frame or the bridge's 15 s keepalive, so opening is bounded by the
    /// stream idle timeout.
    pub(crate) fn open_observe(ctx: RunCtx, run_id: &str, after: Option<&str>) -> Result<Run> {
        let req = proto::ObserveRunRequest {
            run_id: run_id.to_string(),
            after_offset: after.map(str::to_string),
        };
        let open = |ctx: RunCtx| {
            let stream = ctx.link.stream(
                &ctx.conn,
                AGENTS,
                "ObserveRun",
                &req,
                CallOpts {
                    deadline: Some(stream_open_deadline(&ctx.conn)),
                    abort: None,
                },
            )?;
            Run::start(ctx, stream, Phase::Observe, run_id.to_string(), false)
        };
        match open(ctx.clone()) {
            Err(e) if e.kind == ErrorKind::NotFound => {
                let local = !ctx.cwd.is_empty();
                let opts = proto::GetRunOptions {
                    cwd: ctx.cwd.clone(),
                    runtime: if local { proto::Runtime::Local as i32 } else { 0 },
                    ..Default::default()
                };
                get_run(&ctx, run_id, opts, None)?;
                open(ctx)
            }
            other => other,
        }
    }

    fn start(ctx: RunCtx, mut stream: FrameStream, phase: Phase, run_id: String, deltas: bool) -> Result<Run> {
        let link = ctx.link.clone();
        let conn = ctx.conn.clone();
        let agent_id = ctx.agent_id.clone();
        let live = matches!(phase, Phase::Live);
        let shared = Arc::new(Shared {
            agent_id: ctx.agent_id.clone(),
            cwd: ctx.cwd.clone(),
            ctx,
            deltas,
            summary: Mutex::new(Summary {
                run_id,
                status: Some(RunStatus::Running),
                ..Summary::default()
            }),
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicU64::new(1),
            abort: AbortSlot::default(),
            closed: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            cancel_requested: AtomicBool::new(false),
            local_end: Mutex::new(None),
            wake: Mutex::new(None),
        });
        shared.abort.set(stream.abort_handle());
        let (tx, rx) = sync_channel(QUEUE_CAPACITY);
        // Read the first frames here: an error end frame (unknown agent, busy…) fails the send.
        let mut reader = Reader {
            run_id_known: !shared.summary.lock().run_id.is_empty(),
            shared: shared.clone(),
            tx,
            out: Batch::default(),
            phase,
            done: false,
            replay: Replay::default(),
            messages_delivered: 0,
            seen: Default::default(),
        };
        // Only the first frame is handled before `send` returns (the rest of what the read
        // brought goes to the reader thread), so status listeners set then miss nothing.
        let explain = |e: Error| link.explain(&conn, e);
        let mut first = match stream.next_batch() {
            Ok(batch) => batch,
            Err(e) => {
                if live && e.kind == ErrorKind::Timeout {
                    send_watch::watch(&link, &conn, &agent_id, Unanswered::Stream(Box::new(stream)));
                }
                return Err(explain(e));
            }
        };
        // The first read had the opening's deadline; from now on only the idle timeout counts.
        stream.set_deadline(None);
        let rest = FrameBatch {
            data: first.data.clone(),
            frames: first.frames.split_off(first.frames.len().min(1)),
            end: std::mem::take(&mut first.end),
        };
        let flow = if first.frames.is_empty() && rest.end {
            reader.done = true;
            Flow::Stop
        } else {
            reader.take(&first).map_err(explain)?
        };
        let spawn = std::thread::Builder::new().name("cursor-run".into()).spawn(move || {
            if flow != Flow::Stop {
                // A panic in the library must not kill the consumer silently: it ends the run
                // with an internal error event.
                let pumped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.pump(stream, rest)));
                if let Err(p) = pumped {
                    let what = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    let e = Error::internal(format!("panic in the run reader: {what}"));
                    // A status listener may panic again here: the error is queued first.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.fail(e)));
                }
            }
            reader.flush();
            let shared = reader.shared.clone();
            shared.abort.clear();
            shared.finished.store(true, Ordering::Release);
            // Dropping the reader drops the queue's sender: pollers then see the end.
            drop(reader);
            shared.wake();
        });
        if let Err(e) = spawn {
            return Err(Error::internal(format!("cannot start the run reader thread: {e}")));
        }
        Ok(Run {
            shared,
            inbox: std::mem::ManuallyDrop::new(Mutex::new(Inbox {
                rx: Some(rx),
                data: Bytes::new(),
                items: Vec::new().into_iter(),
                text: String::new(),
            })),
        })
    }

    /// `Usage` in a forked child (the reader thread lives in the parent).
    pub fn check_process(&self) -> Result<()> {
        self.shared.ctx.link.check_process()
    }

    /// The run id (known from the stream's first event).
    pub fn id(&self) -> String {
        self.shared.run_id()
    }

    pub fn agent_id(&self) -> &str {
        &self.shared.agent_id
    }

    /// The latest status seen on the stream.
    pub fn status(&self) -> RunStatus {
        self.shared.summary.lock().status.unwrap_or(RunStatus::Running)
    }

    /// Calls `f` (on the reader thread) each time the status changes. Returns an id for
    /// [`Run::remove_status_listener`].
    pub fn on_status_change(&self, f: impl Fn(RunStatus) + Send + Sync + 'static) -> u64 {
        let id = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        self.shared.listeners.lock().push((id, Arc::new(f)));
        id
    }

    pub fn remove_status_listener(&self, id: u64) -> bool {
        let mut l = self.shared.listeners.lock();
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        l.len() != before
    }

    /// Sets a function called (from the reader thread) whenever an event is queued or the
    /// stream ends: for event-loop integration. It must be quick and must not call back into
    /// this run. Once `set_waker` returns, no call of the previous waker is running.
    pub fn set_waker(&self, f: Option<Arc<dyn Fn() + Send + Sync>>) {
        let mut slot = self.shared.wake.lock();
        *slot = f;
        if self.shared.finished.load(Ordering::Acquire) {
            if let Some(w) = slot.as_ref() {
                w();
            }
        }
    }

    /// The next event: waits up to `timeout` (`None` = forever, zero = just poll).
    /// A stream failure is returned once as `Err`, then `End`.
    pub fn next_event(&self, timeout: Option<Duration>) -> Result<Next> {
        self.shared.ctx.link.check_process()?;
        let mut inbox = self.inbox.lock();
        loop {
            let event = match inbox.items.next() {
                Some(Item::Event(e)) => Some(*e),
                Some(Item::Sdk(frame, scan)) => Some(Event::from_scan(
                    inbox.data.slice(frame.get().unwrap_or_default()),
                    &scan,
                )),
                Some(Item::Failed(e)) => {
                    inbox.flush_text(&self.shared);
                    inbox.rx = None; // a failure is always the last item: End from now on
                    return Err(*e);
                }
                None => None,
            };
            if let Some(e) = event {
                Self::account(&mut inbox.text, &e);
                if inbox.items.len() == 0 {
                    inbox.flush_text(&self.shared);
                }
                return Ok(Next::Event(e));
            }
            let Some(rx) = inbox.rx.as_ref() else {
                return Ok(Next::End);
            };
            match Self::receive(rx, timeout) {
                Ok(batch) => {
                    inbox.data = batch.data;
                    inbox.items = batch.items.into_iter();
                }
                Err(RecvTimeoutError::Timeout) => return Ok(Next::Timeout),
                Err(RecvTimeoutError::Disconnected) => {
                    inbox.rx = None;
                    return Ok(Next::End);
                }
            }
        }
    }

    /// The streamed assistant text is summed up as the consumer takes the messages (on its
    /// thread, where each message's text is read anyway), into the inbox's pending text.
    fn account(text: &mut String, e: &Event) {
        // `text()` joins a text of several blocks once and keeps it: later calls cost nothing.
        if let (true, Some(t)) = (e.assistant, e.text()) {
            text.push_str(t);
        }
    }

    /// The next batch from the reader, waiting up to `timeout`.
    fn receive(rx: &Receiver<Batch>, timeout: Option<Duration>) -> std::result::Result<Batch, RecvTimeoutError> {
        match timeout {
            None => match rx.try_recv() {
                Ok(item) => Ok(item),
                Err(_) => {
                    std::thread::yield_now();
                    rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
                }
            },
            Some(t) if t.is_zero() => rx.try_recv().map_err(|e| match e {
                std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            }),
            Some(t) => rx.recv_timeout(t),
        }
    }

    /// Iterates the remaining events (blocking), ending at the stream's end or first error.
    pub fn events(&self) -> impl Iterator<Item = Result<Event>> + '_ {
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            match self.next_event(None) {
                Ok(Next::Event(e)) => Some(Ok(e)),
                Ok(_) => None,
                Err(e) => {
                    failed = true;
                    Some(Err(e))
                }
            }
        })
    }

    /// Iterates the assistant text as it streams: the `text-delta`s when deltas were enabled,
    /// else the text of each `assistant` message (never both).
    pub fn text_chunks(&self) -> impl Iterator<Item = Result<String>> + '_ {
        let want = if self.shared.deltas {
            EventKind::Delta
        } else {
            EventKind::Message
        };
        self.events().filter_map(move |e| match e {
            Ok(ev) if ev.kind == want => ev.text().map(|t| Ok(t.to_string())),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
    }

    /// Waits for the end (consuming the remaining events) and returns the result. A stream
    /// failure that left no result becomes an error result. However the bridge behaves, the
    /// stream ends (see the module's bounds).
    pub fn wait(&self) -> Result<RunResult> {
        Ok(self
            .wait_timeout(None)?
            .expect("a wait without a timeout ends with a result"))
    }

    /// [`Run::wait`] for at most `timeout` (`None`: until the end): `None` when it passed
    /// first (the run goes on).
    pub fn wait_timeout(&self, timeout: Option<Duration>) -> Result<Option<RunResult>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match self.next_event(left) {
                Ok(Next::Event(_)) | Err(_) => continue,
                Ok(Next::End) => break,
                Ok(Next::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some(self.result_now()))
    }

    /// Waits and returns the final assistant text.
    pub fn text(&self) -> Result<String> {
        self.wait().map(|r| r.text)
    }

    /// The result as known now (status `running` while the run goes on).
    pub fn result_now(&self) -> RunResult {
        let s = self.shared.summary.lock();
        let status = s.status.unwrap_or(RunStatus::Running);
        let r = s.result.as_ref().and_then(|r| r.result.clone()).unwrap_or_default();
        let envelope_code = s.result.as_ref().and_then(|r| r.error_code.clone());
        let error_message = r
            .error_message
            .clone()
            .filter(|m| !m.is_empty())
            .or_else(|| {
                if status == RunStatus::Error {
                    s.last_status_message.clone()
                } else {
                    None
                }
            })
            .or_else(|| s.failure.as_ref().map(|f| f.message.clone()));
        RunResult {
            run_id: if r.run_id.is_empty() {
                s.run_id.clone()
            } else {
                r.run_id.clone()
            },
            agent_id: self.shared.agent_id.clone(),
            status,
            text: if r.result.is_empty() {
                s.assistant_text.clone()
            } else {
                r.result.clone()
            },
            model: r.model.map(|m| m.id).filter(|m| !m.is_empty()),
            duration_ms: r.duration_ms,
            usage: s.usage.or(r.usage),
            git: r.git,
            error_code: r.error_code.or(envelope_code).filter(|c| !c.is_empty()),
            error_message,
        }
    }

    /// Cancels the run without blocking: a library thread asks the bridge (once the run id is
    /// known), and the stream then ends with status `cancelled`. If the bridge does not end it
    /// within the request timeout, the run is ended here with a `Cancelled` error. Safe from
    /// any thread (and from status listeners and wakers), idempotent; nothing happens on a run
    /// that is over.
    pub fn cancel(&self) {
        let shared = &self.shared;
        if shared.finished.load(Ordering::Acquire)
            || self.status().is_terminal()
            || shared.ctx.link.is_foreign()
            || shared.cancel_requested.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let worker = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("cursor-run-cancel".into())
            .spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.cancel_now()));
            });
        if let Err(e) = spawned {
            shared.end_locally(Error::new(
                ErrorKind::Cancelled,
                format!("no thread to reach the bridge ({e}); the run was stopped here"),
            ));
        }
    }

    /// Opens the durable stream of this run from `after_offset` (an offset from a previous
    /// observe; `Send` offsets number differently), on the bridge this run came from.
    pub fn observe(&self, after_offset: Option<&str>) -> Result<Run> {
        let ctx = self.shared.ctx.clone();
        ctx.link.check()?;
        Run::open_observe(ctx, &self.id(), after_offset)
    }
}

impl Run {
    /// Stops the reader promptly (closes its socket) without cancelling the run; queued events
    /// stay readable, then the stream ends.
    pub fn stop_reading(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.abort.abort();
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // In a forked child the reader thread does not exist and a lock may have been held
        // by a thread of the parent at fork time: leave everything as it is (a small leak).
        if self.shared.ctx.link.is_foreign() {
            return;
        }
        self.stop_reading();
        // Also drop the queue's receiving end so a reader blocked on a full queue wakes.
        self.inbox.lock().rx.take();
        // SAFETY: dropped once, here, and never used again.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.inbox) };
    }
}

/// What the reader does after a batch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Read on.
    More,
    /// The stream ended cleanly (with or without the run's end).
    Ended,
    /// The run is complete, or nobody listens any more.
    Stop,
}

fn undecodable(e: impl std::fmt::Display) -> Error {
    Error::protocol(format!("undecodable stream frame: {e}"))
}

struct Reader {
    shared: Arc<Shared>,
    tx: SyncSender<Batch>,
    /// The items of the batch being handled, handed over by `flush`.
    out: Batch,
    /// Once the run id is known, messages are no longer decoded to look for it.
    run_id_known: bool,
    phase: Phase,
    /// The run's end (`done`, or a result concluded another way) was handled.
    done: bool,
    replay: Replay,
    /// The `sdk_message`s handed over so far (what a replay skips).
    messages_delivered: u64,
    /// What the last frame's check spares the next one's.
    seen: struct_json::Seen,
}

impl Reader {
    /// Reads on, starting with the frames of `rest` (already read).
    fn pump(&mut self, mut stream: FrameStream, rest: FrameBatch) {
        let mut next = Some(rest);
        let mut flow = Flow::More;
        loop {
            match flow {
                Flow::Stop => return,
                Flow::More => {}
                Flow::Ended => {
                    if let Some(next) = self.refill() {
                        stream = next;
                    } else if self.done || !matches!(self.phase, Phase::Live) {
                        return;
                    } else {
                        // A clean end without result/done: treat like a drop and recover.
                        match self.recover(Error::protocol("the stream ended before the run's result")) {
                            Some(next) => stream = next,
                            None => return,
                        }
                    }
                }
            }
            if self.shared.closed.load(Ordering::Acquire) {
                return;
            }
            let local_end = self.shared.local_end.lock().take();
            if let Some(e) = local_end {
                return self.end_cancelled(e);
            }
            let batch = match next.take() {
                Some(b) => Ok(b),
                None => stream.next_batch(),
            };
            flow = match batch.and_then(|b| self.take(&b)) {
                Ok(f) => f,
                Err(e) => {
                    if self.shared.closed.load(Ordering::Acquire) {
                        return;
                    }
                    let local_end = self.shared.local_end.lock().take();
                    if let Some(end) = local_end {
                        return self.end_cancelled(end);
                    }
                    let e = self.shared.ctx.link.explain(&self.shared.ctx.conn, e);
                    let live = matches!(self.phase, Phase::Live);
                    if !live || e.kind == ErrorKind::BridgeExited || !is_transport(&e) {
                        self.fail(e);
                        return;
                    }
                    match self.recover(e) {
                        Some(next) => {
                            stream = next;
                            Flow::More
                        }
                        None => return,
                    }
                }
            };
        }
    }

    /// Handles the frames of one read and hands their events over in one queue item.
    fn take(&mut self, batch: &FrameBatch) -> Result<Flow> {
        self.out.data = batch.data.clone();
        self.out.items.reserve(batch.frames.len());
        let mut flow = Ok(if batch.end { Flow::Ended } else { Flow::More });
        for range in &batch.frames {
            let frame = &batch.data[range.clone()];
            let handled = match struct_json::scan(frame, &mut self.seen) {
                Some(Ok(scan)) => Ok(self.handle_sdk(&batch.data, range, scan)),
                Some(Err(e)) => Err(undecodable(e)),
                None => <proto::RunStreamMessage as prost::Message>::decode(frame)
                    .map(|m| self.handle(m))
                    .map_err(undecodable),
            };
            match handled {
                Ok(true) => {}
                Ok(false) => {
                    flow = Ok(Flow::Stop);
                    break;
                }
                Err(e) => {
                    flow = Err(e);
                    break;
                }
            }
        }
        if !self.flush() && flow.is_ok() {
            flow = Ok(Flow::Stop);
        }
        flow
    }

    /// While replaying after a recovery: the log's `request` message and the `sdk_message`s
    /// already delivered are skipped.
    fn skipped(&mut self, r#type: &[u8]) -> bool {
        if self.replay.request && r#type == b"request" {
            self.replay.request = false;
            return true;
        }
        if self.replay.messages > 0 {
            self.replay.messages -= 1;
            return true;
        }
        false
    }

    /// A checked `sdk_message` frame of the current batch. Once the run id is known, any but
    /// the status and usage messages (which the summary reads) go over undecoded.
    fn handle_sdk(&mut self, data: &Bytes, range: &Range<usize>, scan: SdkScan) -> bool {
        let ty = &data[range.clone()][scan.r#type.get().unwrap_or_default()];
        if self.skipped(ty) {
            return true;
        }
        if !self.run_id_known || ty == b"status" || ty == b"usage" {
            let event = Event::from_scan(data.slice(range.clone()), &scan);
            self.account(&event);
            return self.deliver(Item::Event(Box::new(event)));
        }
        self.messages_delivered += 1;
        self.deliver(Item::Sdk(Span::of(range), scan))
    }

    fn handle(&mut self, msg: proto::RunStreamMessage) -> bool {
        // A result before the replayed `request`: the stream only tails the run (see `Refill`).
        if let Phase::Recovered(refill @ Refill::Open) = &mut self.phase {
            if self.replay.request && matches!(msg.envelope, Some(Envelope::Result(_))) {
                *refill = Refill::Held(Box::new(msg));
                return true;
            }
        }
        let offset = msg.offset.clone();
        let event = match msg.envelope {
            None => return true, // keepalive
            Some(Envelope::Done(d)) => {
                self.note_run_id(&d.run_id);
                if matches!(self.phase, Phase::Recovered(Refill::Held(_))) {
                    return true; // read on to the end frame, then refill
                }
                self.done = true;
                return false;
            }
            Some(Envelope::SdkMessage(m)) => {
                if self.skipped(m.r#type.as_bytes()) {
                    return true;
                }
                let payload = m.message.map(struct_to_json).unwrap_or(Value::Null);
                Event::new(EventKind::Message, m.r#type, payload, offset)
            }
            Some(Envelope::InteractionUpdate(u)) => Event::new(
                EventKind::Delta,
                u.r#type,
                u.update.map(struct_to_json).unwrap_or(Value::Null),
                offset,
            ),
            Some(Envelope::Step(s)) => Event::new(
                EventKind::Step,
                s.r#type,
                s.step.map(struct_to_json).unwrap_or(Value::Null),
                offset,
            ),
            Some(Envelope::Result(r)) => {
                let payload = serde_json::to_value(&r).unwrap_or(Value::Null);
                self.note_run_id(&r.run_id);
                let status = RunStatus::from_proto(r.status);
                self.shared
                    .ctx
                    .link
                    .track_live_run(&r.run_id, &self.shared.agent_id, false);
                self.shared.summary.lock().result = Some(r);
                self.shared.set_status(status);
                Event::new(EventKind::Result, "result", payload, offset)
            }
        };
        if event.kind == EventKind::Message {
            self.account(&event);
        }
        self.deliver(Item::Event(Box::new(event)))
    }

    /// Updates the summary from an `sdk_message`.
    fn account(&mut self, event: &Event) {
        if !self.run_id_known {
            if let Some(id) = event
                .payload()
                .get("run_id")
                .and_then(Value::as_str)
                .map(str::to_string)
            {
                self.note_run_id(&id);
            }
        }
        self.messages_delivered += 1;
        let mut status_change = None;
        {
            let mut s = self.shared.summary.lock();
            match event.r#type() {
                "status" => {
                    if let Some(m) = event
                        .payload()
                        .get("message")
                        .and_then(Value::as_str)
                        .filter(|m| !m.is_empty())
                    {
                        s.last_status_message = Some(m.to_string());
                    }
                    if let Some(st) = event.payload().get("status").and_then(Value::as_str) {
                        status_change = Some(RunStatus::parse(st));
                    }
                }
                "usage" => {
                    if let Some(u) = event.payload().get("usage") {
                        add_usage(s.usage.get_or_insert_with(Default::default), u);
                    }
                }
                _ => {}
            }
        }
        if let Some(st) = status_change {
            self.shared.set_status(st);
        }
    }

    fn note_run_id(&mut self, id: &str) {
        if !id.is_empty() {
            self.run_id_known = true;
            let mut s = self.shared.summary.lock();
            if s.run_id.is_empty() {
                s.run_id = id.to_string();
                if matches!(self.phase, Phase::Live) {
                    self.shared.ctx.link.track_live_run(id, &self.shared.agent_id, true);
                }
            }
        }
    }

    /// Queues an item into the current batch; false once nobody listens any more.
    fn deliver(&mut self, item: Item) -> bool {
        self.out.items.push(item);
        !self.shared.closed.load(Ordering::Acquire)
    }

    /// Hands the current batch to the consumer (blocking while the queue is full).
    fn flush(&mut self) -> bool {
        if !self.out.items.is_empty() {
            let batch = std::mem::take(&mut self.out);
            let sent = self.tx.send(batch).is_ok();
            self.shared.wake();
            if !sent {
                return false;
            }
        }
        !self.shared.closed.load(Ordering::Acquire)
    }

    /// The run was ended here (a cancel the bridge did not confirm).
    fn end_cancelled(&mut self, e: Error) {
        self.shared.summary.lock().failure = Some(e.clone());
        self.deliver(Item::Failed(Box::new(e)));
        self.shared.set_status(RunStatus::Cancelled);
    }

    fn fail(&mut self, e: Error) {
        self.shared.summary.lock().failure = Some(e.clone());
        // Queued before the status listeners run, which are the caller's code.
        self.deliver(Item::Failed(Box::new(e)));
        if !self.shared.summary.lock().status.is_some_and(RunStatus::is_terminal) {
            self.shared.set_status(RunStatus::Error);
        }
    }

    /// Re-attaches to a live run after its Send stream broke. Returns the stream to continue
    /// from, or None when the run was concluded another way.
    fn recover(&mut self, cause: Error) -> Option<FrameStream> {
        let run_id = self.shared.summary.lock().run_id.clone();
        if run_id.is_empty() {
            self.fail(cause);
            return None;
        }
        crate::log::emit(
            crate::log::Level::Info,
            &format!("run {run_id}: stream broke ({cause}); resuming"),
        );
        match self.observe_from_start(&run_id) {
            Ok(stream) => {
                self.phase = Phase::Recovered(Refill::Open);
                Some(stream)
            }
            // No answer (the bridge is stopped or gone): nothing else would get one either.
            Err(e) if is_transport(&e) || e.kind == ErrorKind::BridgeExited => {
                self.fail(e);
                None
            }
            Err(_) => {
                self.conclude_without_stream(&run_id, cause);
                None
            }
        }
    }

    /// Opens the run's durable log from its start, set up to skip what was delivered.
    fn observe_from_start(&mut self, run_id: &str) -> Result<FrameStream> {
        let ctx = &self.shared.ctx;
        let req = proto::ObserveRunRequest {
            run_id: run_id.to_string(),
            after_offset: None,
        };
        let opts = CallOpts {
            deadline: Some(stream_open_deadline(&ctx.conn)),
            abort: Some(&self.shared.abort),
        };
        let stream = ctx.link.stream(&ctx.conn, AGENTS, "ObserveRun", &req, opts)?;
        self.shared.abort.set(stream.abort_handle());
        self.replay = Replay {
            request: true,
            messages: self.messages_delivered,
        };
        Ok(stream)
    }

    /// After a live-tail ObserveRun ended: replay the finished run's log for the skipped
    /// events (then its result); if that is impossible, deliver the held result.
    fn refill(&mut self) -> Option<FrameStream> {
        let Phase::Recovered(refill) = &mut self.phase else {
            return None;
        };
        let Refill::Held(held) = std::mem::replace(refill, Refill::Done) else {
            return None;
        };
        let run_id = self.shared.run_id();
        match self.observe_from_start(&run_id) {
            Ok(stream) => Some(stream),
            Err(_) => {
                self.handle(*held);
                self.done = true;
                None
            }
        }
    }

    /// ObserveRun answered but could not serve the run: wait for it (as long as a silent stream
    /// may last), else read its snapshot.
    fn conclude_without_stream(&mut self, run_id: &str, cause: Error) {
        let ctx = &self.shared.ctx;
        let wait = proto::WaitLiveRunRequest {
            run_id: run_id.to_string(),
        };
        let opts = CallOpts {
            deadline: Some(stream_open_deadline(&ctx.conn)),
            abort: Some(&self.shared.abort),
        };
        let result = ctx
            .link
            .unary::<_, proto::WaitLiveRunResponse>(
                &ctx.conn,
                AGENTS,
                "WaitLiveRun",
                &wait,
                Idempotency::Idempotent,
                opts,
            )
            .ok()
            .and_then(|r| r.result)
            .or_else(|| {
                let get = proto::GetRunOptions {
                    cwd: ctx.link.cwd_or_workspace(&self.shared.cwd),
                    ..Default::default()
                };
                get_run(ctx, run_id, get, Some(&self.shared.abort))
                    .ok()
                    .filter(|s| RunStatus::from_proto(s.status).is_terminal())
                    .map(snapshot_to_result)
            });
        match result {
            Some(r) => {
                let envelope = proto::RunStreamResult {
                    agent_id: r.agent_id.clone(),
                    run_id: r.run_id.clone(),
                    status: r.status,
                    error_code: r.error_code.clone(),
                    result: Some(r),
                };
                let msg = proto::RunStreamMessage {
                    envelope: Some(Envelope::Result(envelope)),
                    offset: None,
                };
                self.handle(msg);
                self.done = true;
            }
            None => self.fail(cause),
        }
    }
}

/// When a stream opened now must have its head: the bridge flushes it with its first frame or
/// its 15 s keepalive, so the idle timeout bounds it (never less than the request timeout).
fn stream_open_deadline(conn: &Connection) -> Instant {
    let o = conn.transport.options();
    Instant::now() + o.stream_idle_timeout.max(o.unary_timeout)
}

/// `GetRun` on the run's bridge (cwd and key defaulted as for the client's own call).
fn get_run(
    ctx: &RunCtx,
    run_id: &str,
    mut opts: proto::GetRunOptions,
    abort: Option<&AbortSlot>,
) -> Result<proto::RunSnapshot> {
    if opts.runtime != proto::Runtime::Cloud as i32 {
        opts.cwd = ctx.link.cwd_or_workspace(&opts.cwd);
    }
    opts.api_key = ctx.link.key(&opts.api_key);
    let req = proto::GetRunRequest {
        run_id: run_id.to_string(),
        options: Some(opts),
    };
    let r: proto::GetRunResponse = ctx.link.unary(
        &ctx.conn,
        AGENTS,
        "GetRun",
        &req,
        Idempotency::Idempotent,
        CallOpts { deadline: None, abort },
    )?;
    r.run.ok_or_else(|| Error::protocol("GetRun returned no run"))
}

fn is_transport(e: &Error) -> bool {
    matches!(e.kind, ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::Protocol)
}

fn snapshot_to_result(s: proto::RunSnapshot) -> proto::RunResult {
    proto::RunResult {
        run_id: s.run_id,
        agent_id: s.agent_id,
        status: s.status,
        result: s.result,
        model: s.model,
        duration_ms: s.duration_ms,
        git: s.git,
        created_at: s.created_at,
        usage: s.usage,
        error_code: s.error_code,
        error_message: s.error_message,
    }
}

/// Adds a `usage` payload (snake_case or camelCase; numbers or strings) into `sum`.
fn add_usage(sum: &mut proto::TokenUsage, u: &Value) {
    let get = |snake: &str, camel: &str| -> Option<i64> {
        let v = u.get(snake).or_else(|| u.get(camel))?;
        v.as_i64()
            .or_else(|| v.as_f64().map(|f| f as i64))
            .or_else(|| v.as_str()?.parse().ok())
    };
    sum.input_tokens += get("input_tokens", "inputTokens").unwrap_or(0);
    sum.output_tokens += get("output_tokens", "outputTokens").unwrap_or(0);
    sum.cache_read_tokens += get("cache_read_tokens", "cacheReadTokens").unwrap_or(0);
    sum.cache_write_tokens += get("cache_write_tokens", "cacheWriteTokens").unwrap_or(0);
    if let Some(r) = get("reasoning_tokens", "reasoningTokens") {
        *sum.reasoning_tokens.get_or_insert(0) += r;
    }
    let total = get("total_tokens", "totalTokens").unwrap_or_else(|| {
        get("input_tokens", "inputTokens").unwrap_or(0) + get("output_tokens", "outputTokens").unwrap_or(0)
    });
    sum.total_tokens += total;
}

/// A protobuf Struct as plain JSON. The same result as `serde_json::to_value(&s)` (including
/// `Null` for the whole payload when a number is NaN or infinite, which that call refuses), but
/// it moves the decoded strings instead of serializing and copying them (a stream hot path).
pub(crate) fn struct_to_json(s: pbjson_types::Struct) -> Value {
    fields_to_json(s.fields).unwrap_or(Value::Null)
}

fn fields_to_json(fields: std::collections::HashMap<String, pbjson_types::Value>) -> Option<Value> {
    let mut map = serde_json::Map::new();
    for (k, v) in fields {
        map.insert(k, pb_value_to_json(v)?);
    }
    Some(Value::Object(map))
}

fn pb_value_to_json(v: pbjson_types::Value) -> Option<Value> {
    use pbjson_types::value::Kind;
    Some(match v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::NumberValue(n)) => Value::Number(serde_json::Number::from_f64(n)?),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::StructValue(s)) => fields_to_json(s.fields)?,
        Some(Kind::ListValue(l)) => Value::Array(l.values.into_iter().map(pb_value_to_json).collect::<Option<_>>()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_to_json_equals_serde_to_value() {
        let v: pbjson_types::Struct = serde_json::from_value(json!({
            "type": "assistant", "n": 1.5, "i": 120, "ok": true, "none": null,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "t0 "}, 3, [false, "x"], {}]},
            "empty": [], "obj": {"a": {"b": "c"}}
        }))
        .unwrap();
        assert_eq!(struct_to_json(v.clone()), serde_json::to_value(&v).unwrap());
        let mut nan = v.clone();
        nan.fields.insert(
            "bad".into(),
            pbjson_types::Value {
                kind: Some(pbjson_types::value::Kind::NumberValue(f64::NAN)),
            },
        );
        assert!(serde_json::to_value(&nan).is_err());
        assert_eq!(struct_to_json(nan), Value::Null);
        assert_eq!(struct_to_json(Default::default()), json!({}));
    }

    #[test]
    fn status_normalisation() {
        assert_eq!(RunStatus::parse("RUN_LIFECYCLE_STATUS_FINISHED"), RunStatus::Finished);
        assert_eq!(RunStatus::parse("RUNNING"), RunStatus::Running);
        assert_eq!(RunStatus::parse("creating"), RunStatus::Running);
        assert_eq!(RunStatus::parse("RUN_LIFECYCLE_STATUS_UNSPECIFIED"), RunStatus::Error);
        assert_eq!(RunStatus::parse("who-knows"), RunStatus::Error);
        assert_eq!(RunStatus::from_proto(99), RunStatus::Error);
        assert_eq!(RunStatus::from_proto(5), RunStatus::Cancelled);
    }

    #[test]
    fn an_item_is_small() {
        // The consumer's core reads every item the reader's core wrote: 136 bytes before spans
        // and boxed rare cases.
        assert!(std::mem::size_of::<Item>() <= 64, "{}", std::mem::size_of::<Item>());
    }

    #[test]
    fn an_event_is_moved_without_a_memcpy_call() {
        // Up to 128 bytes, moves are a few vector loads and stores; beyond, a `memcpy` call,
        // several per event on the C path (measured: ~10% of the consumer's instructions).
        assert!(std::mem::size_of::<Event>() <= 128, "{}", std::mem::size_of::<Event>());
    }

    #[test]
    fn assistant_text_extraction() {
        let e = Event::new(
            EventKind::Message,
            "assistant",
            json!({"message":{"role":"assistant","content":[{"type":"text","text":"Hel"},{"type":"tool_use","id":"1"},{"type":"text","text":"lo"}]}}),
            None,
        );
        assert_eq!(e.text(), Some("Hello"));
        let d = Event::new(EventKind::Delta, "text-delta", json!({"text":"x"}), None);
        assert_eq!(d.text(), Some("x"));
        let s = Event::new(EventKind::Message, "status", json!({}), None);
        assert_eq!(s.text(), None);
    }

    /// A frame's event two ways: text read off the wire (payload never built), and text read
    /// from the JSON payload; plus the payload itself against the generated decoder.
    fn both_ways(frame: &[u8]) -> (Option<String>, Option<String>) {
        let scan = struct_json::scan(frame, &mut Default::default());
        let scan = scan.expect("an sdk_message").expect("valid");
        let bytes = Bytes::copy_from_slice(frame);
        let lazy = Event::from_scan(bytes.clone(), &scan);
        let wire = lazy.text().map(str::to_string);
        assert!(lazy.payload.get().is_none(), "text() must not build the payload");
        let eager = Event::from_scan(bytes.clone(), &scan);
        let json = eager.payload().clone();
        assert_eq!(Event::from_scan(bytes, &scan).into_payload(), json);
        let generated = match <proto::RunStreamMessage as prost::Message>::decode(frame)
            .unwrap()
            .envelope
        {
            Some(Envelope::SdkMessage(m)) => m.message.map(struct_to_json).unwrap_or(Value::Null),
            _ => panic!("not an sdk_message"),
        };
        assert_eq!(json, generated);
        (wire, eager.text().map(str::to_string))
    }

    #[test]
    fn wire_text_equals_json_text() {
        use struct_json::tests::ld;
        let sv = |s: &str| ld(3, s.as_bytes()); // Value{string}
        let entry = |k: &str, v: &[u8]| ld(1, &[ld(1, k.as_bytes()), ld(2, v)].concat());
        let strukt = |fields: &[Vec<u8>]| fields.concat();
        let block = |ty: &str, text: &str| ld(5, &strukt(&[entry("type", &sv(ty)), entry("text", &sv(text))]));
        let content = |blocks: &[Vec<u8>]| ld(6, &blocks.iter().map(|b| ld(1, b)).collect::<Vec<_>>().concat());
        let frame = |payload: Vec<u8>| ld(1, &[ld(1, b"assistant"), ld(2, &payload)].concat());
        let message = |inner: Vec<u8>| frame(strukt(&[entry("type", &sv("assistant")), entry("message", &inner)]));
        let cases: Vec<(Vec<u8>, Option<&str>)> = vec![
            (
                message(ld(
                    5,
                    &strukt(&[entry(
                        "content",
                        &content(&[block("text", "a"), block("tool_use", "x"), block("text", "b")]),
                    )]),
                )),
                Some("ab"),
            ),
            // The last of duplicate keys wins, as in the JSON object.
            (
                message(ld(
                    5,
                    &strukt(&[
                        entry("content", &content(&[block("text", "old")])),
                        entry("content", &content(&[block("text", "new")])),
                    ]),
                )),
                Some("new"),
            ),
            (
                frame(strukt(&[
                    entry(
                        "message",
                        &ld(5, &strukt(&[entry("content", &content(&[block("text", "x")]))])),
                    ),
                    entry("message", &sv("not an object")),
                ])),
                None,
            ),
            // Value fields in any order; a later kind replaces an earlier one.
            (
                message(
                    [
                        ld(3, b"s"),
                        ld(5, &strukt(&[entry("content", &content(&[block("text", "k")]))])),
                    ]
                    .concat(),
                ),
                Some("k"),
            ),
            (
                message(
                    [
                        ld(5, &strukt(&[entry("content", &content(&[block("text", "k")]))])),
                        ld(3, b"s"),
                    ]
                    .concat(),
                ),
                None,
            ),
            // An entry with the value before the key.
            (
                message(ld(
                    5,
                    &ld(1, &[ld(2, &content(&[block("text", "v")])), ld(1, b"content")].concat()),
                )),
                Some("v"),
            ),
            (
                message(ld(5, &strukt(&[entry("content", &content(&[block("text", "")]))]))),
                None,
            ),
            (message(ld(5, &strukt(&[entry("content", &sv("a string"))]))), None),
            (
                message(ld(
                    5,
                    &strukt(&[entry("content", &content(&[sv("bare"), block("text", "ok")]))]),
                )),
                Some("ok"),
            ),
            // A NaN anywhere nulls the payload, and the text with it.
            (
                frame(strukt(&[
                    entry(
                        "message",
                        &ld(5, &strukt(&[entry("content", &content(&[block("text", "t")]))])),
                    ),
                    entry("n", &[0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f]),
                ])),
                None,
            ),
            (frame(Vec::new()), None),
        ];
        for (i, (f, want)) in cases.into_iter().enumerate() {
            let (wire, json) = both_ways(&f);
            assert_eq!(wire.as_deref(), want, "case {i}: from the wire");
            assert_eq!(json.as_deref(), want, "case {i}: from the JSON");
        }
    }

    #[test]
    fn usage_sums_any_spelling() {
        let mut sum = proto::TokenUsage::default();
        add_usage(
            &mut sum,
            &json!({"input_tokens": 10, "output_tokens": "5", "cache_read_tokens": 2.0}),
        );
        add_usage(
            &mut sum,
            &json!({"inputTokens": 1, "outputTokens": 1, "totalTokens": 3, "reasoningTokens": 4}),
        );
        assert_eq!(sum.input_tokens, 11);
        assert_eq!(sum.output_tokens, 6);
        assert_eq!(sum.cache_read_tokens, 2);
        assert_eq!(sum.total_tokens, 18);
        assert_eq!(sum.reasoning_tokens, Some(4));
    }
}
