//! `cursor_run` and `cursor_event`: polling, waiting, cancelling, push callbacks and a wake
//! descriptor for event loops.

use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use parking_lot::Mutex;

use super::error::{cursor_error, into_raw};
use super::{
    c_string, c_string_of, call, cursor_status, handle, json, opt_str, out_ptr, quiet, take_handle, write_string,
};
use crate::error::{Error, ErrorKind, Result};
use crate::run::{Event, EventKind, Next, Run, RunResult, RunStatus};

/// What an event carries. Values are stable. (Named `_t` because C cannot have a type and the
/// accessor `cursor_event_kind()` share a name.)
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cursor_event_kind_t {
    /// Not an event: what `cursor_event_kind(NULL)` gives.
    CURSOR_EVENT_INVALID = 0,
    /// An `sdk_message`: `cursor_event_type` is "assistant", "status", "tool_call", "thinking",
    /// "usage", "system", "task", "request", … (unknown types pass through).
    CURSOR_EVENT_MESSAGE = 1,
    /// An interaction update (with `enableDeltas`): "text-delta", "thinking-delta", …
    CURSOR_EVENT_DELTA = 2,
    /// A conversation step (with `enableSteps`).
    CURSOR_EVENT_STEP = 3,
    /// The run's result; `cursor_event_type` is "result".
    CURSOR_EVENT_RESULT = 4,
}

/// A run's status. Values are stable. (Named `_t` because of the accessor `cursor_run_status()`.)
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cursor_run_status_t {
    /// Not a run: what `cursor_run_status(NULL)` gives.
    CURSOR_RUN_INVALID = 0,
    CURSOR_RUN_RUNNING = 1,
    CURSOR_RUN_FINISHED = 2,
    CURSOR_RUN_ERROR = 3,
    CURSOR_RUN_CANCELLED = 4,
    CURSOR_RUN_EXPIRED = 5,
}

/// Push-mode callback. Called on a library thread, in stream order, once per event with
/// `event` non-NULL and `error` NULL; then exactly once more with `event` NULL as the final
/// call: `error` NULL when the stream ended normally, else the failure. `event` and `error` are
/// borrowed for the duration of the call only (copy what you keep). The callback must not throw
/// or longjmp, and must not call `cursor_run_next_event` or `cursor_run_wait` on this run; it may
/// call `cursor_run_cancel` (which never blocks), and `cursor_run_free` (which then returns at
/// once; the final call follows the callback's return).
pub type cursor_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const cursor_event, error: *const cursor_error)>;

/// One event of a run. Owned by the caller (`cursor_event_free`); its strings are borrowed
/// until then. Safe to read from any thread. An event shares the buffer of the read it came in
/// with the other events of that read (a fast stream's reads are 128 KiB) until it is freed:
/// free events rather than keep them, and copy what you keep.
pub struct cursor_event {
    event: Event,
    /// The C strings: the type (static for the common ones), the text (the run has joined it
    /// already), the others made on first use.
    r#type: Cow<'static, CStr>,
    json: OnceLock<CString>,
    text: CText,
    offset: OnceLock<Option<CString>>,
}

thread_local! {
    /// The allocation of the last event freed on this thread: a polling loop frees each event
    /// before it takes the next, which then needs no `malloc`/`free` pair (a tenth of a streamed
    /// event's cost on the consumer's thread). Freed with the thread.
    static SPARE: Cell<Option<Box<MaybeUninit<cursor_event>>>> = const { Cell::new(None) };
}

/// Texts of up to this many bytes are kept inside the event handle.
const INLINE_TEXT: usize = 47;

/// An event's text as a C string: inside the handle when short (a streamed chunk usually is:
/// one allocation per event, the handle's), else its own.
enum CText {
    None,
    /// The text, a NUL, and zeroes; no NUL inside the text.
    Inline(u8, [u8; INLINE_TEXT + 1]),
    Heap(CString),
}

impl CText {
    fn of(event: &mut Event) -> CText {
        let Some(t) = event.text().map(str::as_bytes) else {
            return CText::None;
        };
        if t.len() <= INLINE_TEXT && !has_nul(t) {
            let mut bytes = [0; INLINE_TEXT + 1];
            bytes[..t.len()].copy_from_slice(t);
            return CText::Inline(t.len() as u8, bytes);
        }
        // A text the run joined from several blocks: the C string takes it over.
        event.take_text().map_or(CText::None, |t| CText::Heap(c_string(t)))
    }

    fn get(&self) -> Option<&CStr> {
        match self {
            CText::None => None,
            CText::Inline(len, bytes) => {
                // SAFETY: the text, then a NUL at `len`; no NUL inside the text (checked).
                Some(unsafe { CStr::from_bytes_with_nul_unchecked(&bytes[..=usize::from(*len)]) })
            }
            CText::Heap(c) => Some(c),
        }
    }
}

/// Whether a short text holds a NUL byte, tested a word at a time inline (the words overlap
/// for lengths that are not a multiple of their size): no `memchr` call, no loop per byte.
#[inline(always)]
fn has_nul(t: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |w: u64| w.wrapping_sub(LOW) & !w & HIGH != 0;
    let n = t.len();
    let word = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().unwrap_or_default());
    let half = |i: usize| u64::from(u32::from_le_bytes(t[i..i + 4].try_into().unwrap_or_default()));
    if n >= 8 {
        (0..n / 8).any(|k| zero_in(word(8 * k))) || zero_in(word(n - 8))
    } else if n >= 4 {
        // Both halves in one word: no zero byte in the upper half from the join.
        zero_in(half(0) | half(n - 4) << 32)
    } else {
        t.iter().fold(false, |nul, b| nul | (*b == 0))
    }
}

/// The common event types, as C strings that need no allocation per event.
const KNOWN_TYPES: [&CStr; 12] = [
    c"assistant",
    c"status",
    c"tool_call",
    c"thinking",
    c"system",
    c"usage",
    c"user",
    c"result",
    c"text-delta",
    c"thinking-delta",
    c"tool-call-started",
    c"tool-call-completed",
];

impl cursor_event {
    #[inline(always)]
    fn new(mut event: Event) -> cursor_event {
        let text = CText::of(&mut event);
        let t = event.r#type();
        let r#type = match event.is_assistant() {
            true => Cow::Borrowed(c"assistant"),
            false => match KNOWN_TYPES.iter().find(|k| k.to_bytes() == t.as_bytes()) {
                Some(k) => Cow::Borrowed(*k),
                None => Cow::Owned(c_string_of(t)),
            },
        };
        cursor_event {
            event,
            r#type,
            json: OnceLock::new(),
            text,
            offset: OnceLock::new(),
        }
    }

    /// The event as a handle, made in the allocation the last event freed on this thread
    /// left, if any (in place: no copy of the handle).
    fn handle(event: Event) -> *mut cursor_event {
        match SPARE.with(Cell::take) {
            Some(mut spare) => {
                spare.write(cursor_event::new(event));
                Box::into_raw(spare).cast()
            }
            None => super::into_handle(cursor_event::new(event)),
        }
    }

    /// Drops a freed event and keeps its allocation for the next one made on this thread.
    fn recycle(e: Box<cursor_event>) {
        let raw = Box::into_raw(e);
        // SAFETY: the event is dropped in place once; the allocation, no longer holding an
        // event, is then kept (or freed) as the `MaybeUninit` it now is.
        let spare = unsafe {
            std::ptr::drop_in_place(raw);
            Box::from_raw(raw.cast::<MaybeUninit<cursor_event>>())
        };
        // Skipped, and the allocation freed, while the thread's locals are being torn down.
        let _ = SPARE.try_with(|s| s.set(Some(spare)));
    }

    fn r#type(&self) -> &CStr {
        &self.r#type
    }

    fn json(&self) -> &CString {
        // `serde_json::to_string`, not `Value::to_string` (Display): it writes straight into a
        // pre-sized buffer instead of going through `fmt::Write` with repeated regrowth.
        self.json
            .get_or_init(|| c_string(serde_json::to_string(self.event.payload()).unwrap_or_default()))
    }

    fn text(&self) -> Option<&CStr> {
        self.text.get()
    }

    fn offset(&self) -> Option<&CString> {
        self.offset
            .get_or_init(|| self.event.offset().map(c_string_of))
            .as_ref()
    }
}

/// A run handle. Consume it from one thread at a time (it may move between threads);
/// `cursor_run_cancel`, `cursor_run_status` and `cursor_run_id` are safe from any thread.
pub struct cursor_run {
    run: Arc<Run>,
    id: Mutex<Option<CString>>,
    notifier: Mutex<Option<Arc<Notifier>>>,
    push: Mutex<Option<Push>>,
    /// A callback was set (what polling checks on every call, without taking `push`'s lock).
    pushing: AtomicBool,
}

struct Push {
    thread: Option<JoinHandle<()>>,
    thread_id: ThreadId,
    stop: Arc<AtomicBool>,
}

pub(crate) fn new_run(run: Run) -> *mut cursor_run {
    super::into_handle(cursor_run {
        run: Arc::new(run),
        id: Mutex::new(None),
        notifier: Mutex::new(None),
        push: Mutex::new(None),
        pushing: AtomicBool::new(false),
    })
}

/// Maps a run's terminal status to a call status for `cursor_prompt`: cancellation becomes
/// `Cancelled`, error and expiry `RunFailed`, each carrying the run's reason.
pub(crate) fn result_to_status(r: &RunResult) -> Result<cursor_status> {
    let reason = || {
        r.error_message
            .clone()
            .unwrap_or_else(|| format!("the run ended {}", r.status.name()))
    };
    match r.status {
        RunStatus::Finished | RunStatus::Running => Ok(cursor_status::CURSOR_OK),
        RunStatus::Cancelled => Err(Error::new(ErrorKind::Cancelled, reason())),
        RunStatus::Error | RunStatus::Expired => {
            let mut e = Error::new(ErrorKind::RunFailed, reason());
            e.connect_code = r.error_code.clone();
            Err(e)
        }
    }
}

fn timeout_of(ms: i32) -> Option<Duration> {
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

/// Takes the next event. `timeout_ms`: 0 polls without blocking, a negative value waits as long
/// as it takes. Returns `CURSOR_OK` with `*out` owning an event (`cursor_event_free`),
/// `CURSOR_TIMEOUT` when none arrived in time, `CURSOR_END` after the last event, or an error
/// (reported once; `CURSOR_END` follows). Keepalives never surface. Fails with `CURSOR_E_USAGE`
/// in push mode.
///
/// Blocks at most `timeout_ms`. However the bridge behaves, the stream ends: a silent stream is
/// dead after `streamIdleTimeoutMs`, re-attaching to it takes at most `streamIdleTimeoutMs` plus
/// `requestTimeoutMs`, and a bridge that does not answer ends the run with `CURSOR_E_DEADLINE`.
/// After `cursor_run_cancel` the stream ends within `requestTimeoutMs` (normally milliseconds).
///
/// # Safety
/// `r` must be a live run handle and `out` a valid pointer; `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_next_event(
    r: *mut cursor_run,
    timeout_ms: i32,
    out: *mut *mut cursor_event,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let r = handle(r, "run")?;
        r.run.check_process()?;
        if r.pushing.load(Ordering::Acquire) {
            return Err(Error::usage(
                "the run delivers through its callback (cursor_run_set_callback)",
            ));
        }
        let mut next = r.run.next_event(timeout_of(timeout_ms))?;
        // The descriptor matters only when nothing came (an event leaves it as it is).
        let notifier = match next {
            Next::Event(_) => None,
            _ => r.notifier.lock().clone(),
        };
        if let (Next::Timeout, Some(n)) = (&next, &notifier) {
            // Nothing queued: clear the descriptor, then look once more so an event queued in
            // between is not left behind a cleared descriptor.
            n.clear();
            next = r.run.next_event(Some(Duration::ZERO))?;
            if !matches!(next, Next::Timeout) {
                n.signal();
            }
        }
        match next {
            Next::Event(e) => {
                *out = cursor_event::handle(e);
                Ok(cursor_status::CURSOR_OK)
            }
            Next::Timeout => Ok(cursor_status::CURSOR_TIMEOUT),
            Next::End => {
                // The end may be seen before the reader's last wake-up lands: the descriptor
                // stays readable from the end on, as documented, either way.
                if let Some(n) = &notifier {
                    n.signal();
                }
                Ok(cursor_status::CURSOR_END)
            }
        }
    })
}

/// Waits for the run to end (consuming the remaining events) and writes the result as JSON to
/// `*result_json_out` (owned; may be NULL to skip): `{"runId","agentId","status":"finished"|
/// "error"|"cancelled"|"expired","text","model","durationMs","usage","git","errorCode",
/// "errorMessage"}`. A run that failed, was cancelled or expired is still `CURSOR_OK` here: read
/// `status`. `timeout_ms` < 0 waits until the end (bounded as for `cursor_run_next_event`); when
/// `timeout_ms` passes first, returns `CURSOR_TIMEOUT` (not an error; `*result_json_out` stays
/// NULL) and the run goes on.
///
/// # Safety
/// `result_json_out` must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_wait(
    r: *mut cursor_run,
    timeout_ms: i32,
    result_json_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        super::clear_out(result_json_out);
        let r = handle(r, "run")?;
        r.run.check_process()?;
        if r.pushing.load(Ordering::Acquire) {
            return Err(Error::usage(
                "the run delivers through its callback (cursor_run_set_callback)",
            ));
        }
        let Some(result) = r.run.wait_timeout(timeout_of(timeout_ms))? else {
            return Ok(cursor_status::CURSOR_TIMEOUT);
        };
        if !result_json_out.is_null() {
            write_string(result_json_out, json(&result.to_json())?);
        }
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Cancels the run. Never blocks (safe in a frame loop): a library thread asks the bridge, as
/// soon as the run id is known, and the outcome shows in the stream, which ends with status
/// cancelled (a reader blocked in `cursor_run_next_event` or `cursor_run_wait` wakes). If the
/// bridge does not end the stream within `requestTimeoutMs`, the run is ended here with a
/// `CURSOR_E_CANCELLED` error event. Safe from any thread, including inside the push callback;
/// idempotent; on a run already over it does nothing. Returns `CURSOR_OK`, or
/// `CURSOR_E_INVALID_ARGUMENT` for NULL, `CURSOR_E_USAGE` in a forked child.
///
/// # Safety
/// `r` must be NULL or a live run handle; `err` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_cancel(r: *mut cursor_run, err: *mut *mut cursor_error) -> cursor_status {
    call(err, || {
        let r = handle(r, "run")?;
        r.run.check_process()?;
        r.run.cancel();
        Ok(cursor_status::CURSOR_OK)
    })
}

/// The run id (known once `cursor_agent_send` returned). Borrowed until `cursor_run_free`;
/// `""` if the bridge has not named the run. Safe from any thread.
///
/// # Safety
/// `r`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_run_id(r: *const cursor_run) -> *const c_char {
    quiet(std::ptr::null(), || {
        let Ok(r) = handle(r, "run") else {
            return std::ptr::null();
        };
        let mut id = r.id.lock();
        if id.is_none() {
            let now = r.run.id();
            if now.is_empty() {
                return c"".as_ptr();
            }
            *id = Some(c_string(now));
        }
        id.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// The latest status seen on the stream. Safe from any thread. NULL gives `CURSOR_RUN_INVALID`.
///
/// # Safety
/// `r` must be NULL or a live run handle.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_status(r: *const cursor_run) -> cursor_run_status_t {
    quiet(cursor_run_status_t::CURSOR_RUN_INVALID, || match handle(r, "run") {
        Ok(r) => match r.run.status() {
            RunStatus::Running => cursor_run_status_t::CURSOR_RUN_RUNNING,
            RunStatus::Finished => cursor_run_status_t::CURSOR_RUN_FINISHED,
            RunStatus::Error => cursor_run_status_t::CURSOR_RUN_ERROR,
            RunStatus::Cancelled => cursor_run_status_t::CURSOR_RUN_CANCELLED,
            RunStatus::Expired => cursor_run_status_t::CURSOR_RUN_EXPIRED,
        },
        Err(_) => cursor_run_status_t::CURSOR_RUN_INVALID,
    })
}

/// The assistant text streamed so far (the final text once the run ended). Owned result.
///
/// # Safety
/// `r`, `text_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_run_text(
    r: *mut cursor_run,
    text_out: *mut *mut c_char,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(text_out, "text_out")?;
        write_string(text_out, handle(r, "run")?.run.result_now().text);
        Ok(cursor_status::CURSOR_OK)
    })
}

/// Opens the run's durable event stream after `after_offset` (NULL: from the start; offsets
/// from a previous observe, since `Send` numbers differently). `*out` owns a new run handle
/// whose events are the replayed and then live events.
///
/// # Safety
/// `after_offset` must be NULL or NUL-terminated; `out` valid.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_observe(
    r: *mut cursor_run,
    after_offset: *const c_char,
    out: *mut *mut cursor_run,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        out_ptr(out, "out")?;
        let observed = handle(r, "run")?.run.observe(opt_str(after_offset, "after_offset")?)?;
        *out = new_run(observed);
        Ok(cursor_status::CURSOR_OK)
    })
}

/// A descriptor that becomes readable when the run has events or has ended, for `poll`/`select`/
/// kqueue/epoll loops: when readable, call `cursor_run_next_event(r, 0, …)` until it returns
/// `CURSOR_TIMEOUT` (which re-arms it) or `CURSOR_END`. Owned by the run (do not close it);
/// valid until `cursor_run_free`. Returns -1 on error or where unsupported (Windows).
///
/// # Safety
/// `r`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_run_wait_fd(r: *mut cursor_run) -> i32 {
    quiet(-1, || {
        let Ok(r) = handle(r, "run") else { return -1 };
        let mut slot = r.notifier.lock();
        if let Some(n) = slot.as_ref() {
            return n.read_fd();
        }
        let Some(n) = Notifier::new() else { return -1 };
        let n = Arc::new(n);
        // Anything already queued, or an end already reached, must show at once.
        n.signal();
        let waker = n.clone();
        r.run.set_waker(Some(Arc::new(move || waker.signal())));
        let fd = n.read_fd();
        *slot = Some(n);
        fd
    })
}

struct UserData(*mut c_void);
// SAFETY: the caller hands `user_data` to a library thread by calling `cursor_run_set_callback`
// (documented: it is used on that thread).
unsafe impl Send for UserData {}

/// Switches the run to push mode: a library thread calls `fn` for each event, in order, then
/// once more as the final call (see `cursor_event_fn`). `user_data` is passed through untouched;
/// release it in the final call. Fails with `CURSOR_E_USAGE` if a callback is already set;
/// `fn` NULL is `CURSOR_E_INVALID_ARGUMENT`. Do not poll the run once a callback is set.
/// `cursor_run_free` during push mode stops delivery: it waits for a callback in progress, then
/// the final call is made (with a `CURSOR_E_CANCELLED` error unless the stream had ended)
/// before `cursor_run_free` returns.
///
/// # Safety
/// `fn` must be safe to call from another thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_set_callback(
    r: *mut cursor_run,
    r#fn: cursor_event_fn,
    user_data: *mut c_void,
    err: *mut *mut cursor_error,
) -> cursor_status {
    call(err, || {
        let handle = handle(r, "run")?;
        let Some(callback) = r#fn else {
            return Err(Error::invalid_argument("fn is NULL"));
        };
        let mut push = handle.push.lock();
        if push.is_some() {
            return Err(Error::usage("a callback is already set on this run"));
        }
        handle.pushing.store(true, Ordering::Release);
        let run = handle.run.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let data = UserData(user_data);
        let thread = std::thread::Builder::new()
            .name("cursor-run-callback".into())
            .spawn(move || {
                let data = data;
                deliver(&run, &stop2, |ev, er| unsafe { callback(data.0, ev, er) });
            })
            .map_err(|e| {
                handle.pushing.store(false, Ordering::Release);
                Error::internal(format!("cannot start the callback thread: {e}"))
            })?;
        *push = Some(Push {
            thread_id: thread.thread().id(),
            thread: Some(thread),
            stop,
        });
        Ok(cursor_status::CURSOR_OK)
    })
}

/// How often the push thread looks at the stop flag while no event comes.
const PUSH_POLL: Duration = Duration::from_millis(20);

/// The push loop: events in order, then exactly one final call. A panic in the library ends
/// the run with an internal error (the final call).
fn deliver(run: &Run, stop: &AtomicBool, invoke: impl Fn(*const cursor_event, *const cursor_error)) {
    let final_error: Option<Error> = loop {
        if stop.load(Ordering::Acquire) {
            break Some(Error::new(ErrorKind::Cancelled, "the run handle was freed"));
        }
        // A short wait, so that a free is seen at once even while the reader is stuck in a call.
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.next_event(Some(PUSH_POLL))));
        match step {
            Ok(Ok(Next::Event(e))) => {
                if stop.load(Ordering::Acquire) {
                    break Some(Error::new(ErrorKind::Cancelled, "the run handle was freed"));
                }
                let ev = cursor_event::new(e);
                invoke(&ev, std::ptr::null());
            }
            Ok(Ok(Next::Timeout)) => continue,
            Ok(Ok(Next::End)) => {
                break stop
                    .load(Ordering::Acquire)
                    .then(|| Error::new(ErrorKind::Cancelled, "the run handle was freed"))
            }
            Ok(Err(e)) => break Some(e),
            Err(p) => {
                break Some(Error::internal(format!(
                    "panic inside cursor_sdk: {}",
                    super::panic_message(&p)
                )))
            }
        }
    };
    match final_error {
        None => invoke(std::ptr::null(), std::ptr::null()),
        Some(e) => {
            let boxed = into_raw(e);
            invoke(std::ptr::null(), boxed);
            // SAFETY: made just above, borrowed only during the call.
            unsafe { drop(Box::from_raw(boxed)) };
        }
    }
}

/// Frees a run handle. NULL is accepted. It does not cancel the run in the bridge (call
/// `cursor_run_cancel` first for that); it stops reading at once (no network wait). In push
/// mode it waits for a callback in progress and for the final call (unless called from inside
/// the callback, when it returns at once and the final call follows the callback's return).
/// The wake descriptor is closed before it returns and never written afterwards. Safe from any
/// thread while another thread is blocked in `cursor_run_next_event` on a different handle;
/// never free a handle another thread is still using.
///
/// # Safety
/// `r` must be NULL or a run from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_run_free(r: *mut cursor_run) {
    quiet((), || {
        let Some(handle) = take_handle(r) else { return };
        if handle.run.check_process().is_err() {
            // A forked child: the threads and locks belong to the parent; leak the handle.
            std::mem::forget(handle);
            return;
        }
        // No wake after this returns: the waker is removed (waiting out a call in progress), so
        // the descriptor is closed with the handle below.
        handle.run.set_waker(None);
        let push = handle.push.lock().take();
        if let Some(mut push) = push {
            push.stop.store(true, Ordering::Release);
            handle.run.stop_reading();
            if push.thread_id != std::thread::current().id() {
                if let Some(t) = push.thread.take() {
                    let _ = t.join();
                }
            }
        }
        drop(handle);
    });
}

/// The event's kind. NULL gives `CURSOR_EVENT_INVALID`.
///
/// # Safety
/// `e` must be NULL or a live event.
#[no_mangle]
pub unsafe extern "C" fn cursor_event_kind(e: *const cursor_event) -> cursor_event_kind_t {
    quiet(cursor_event_kind_t::CURSOR_EVENT_INVALID, || {
        match handle(e, "event").map(|e| e.event.kind) {
            Ok(EventKind::Message) => cursor_event_kind_t::CURSOR_EVENT_MESSAGE,
            Ok(EventKind::Delta) => cursor_event_kind_t::CURSOR_EVENT_DELTA,
            Ok(EventKind::Step) => cursor_event_kind_t::CURSOR_EVENT_STEP,
            Ok(EventKind::Result) => cursor_event_kind_t::CURSOR_EVENT_RESULT,
            Err(_) => cursor_event_kind_t::CURSOR_EVENT_INVALID,
        }
    })
}

/// The event's type: "assistant", "status", "tool_call", "text-delta", "result", …
/// Borrowed until `cursor_event_free`; NULL for a NULL event.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_event_type(e: *const cursor_event) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "event").map_or(std::ptr::null(), |e| e.r#type().as_ptr())
    })
}

/// The event's payload as JSON text (snake_case keys inside messages, as the bridge sends
/// them). Built on the first call (the type and text never need it), so the first call on a
/// large message costs its decoding. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_event_json(e: *const cursor_event) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "event").map_or(std::ptr::null(), |e| e.json().as_ptr())
    })
}

/// The assistant text this event carries (an "assistant" message's text blocks, or a
/// "text-delta"), or NULL. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_event_text(e: *const cursor_event) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "event")
            .ok()
            .and_then(|e| e.text())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// The event's resume offset in its stream, or NULL. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_event_offset(e: *const cursor_event) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "event")
            .ok()
            .and_then(|e| e.offset())
            .map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// Frees an event. NULL is accepted. The calling thread keeps the event's memory (a few
/// hundred bytes) for the next event it receives; it is freed when that thread exits.
///
/// # Safety
/// `e` must be NULL or an event from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_event_free(e: *mut cursor_event) {
    quiet((), || {
        if let Some(e) = take_handle(e) {
            cursor_event::recycle(e);
        }
    });
}

/// A self-pipe that is readable while events may be pending (POSIX; elsewhere never made).
/// Also the wake descriptor of queued tool calls (`cursor_client_tool_fd`).
pub(super) struct Notifier {
    #[cfg(unix)]
    fds: [i32; 2],
    #[cfg(unix)]
    signaled: AtomicBool,
}

#[cfg(unix)]
impl Notifier {
    pub(super) fn new() -> Option<Notifier> {
        let mut fds = [0i32; 2];
        // Close-on-exec from birth where the platform can (a fork+exec elsewhere in the host
        // must not inherit it); non-blocking both ends.
        // SAFETY: plain pipe creation on a valid array.
        #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
        unsafe {
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
                return None;
            }
        }
        // macOS has no pipe2: set the flags right away (a fork+exec in between is a narrow race).
        // SAFETY: as above; the fcntl calls only set flags on the new descriptors.
        #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
        unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return None;
            }
            for fd in fds {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK);
            }
        }
        Some(Notifier {
            fds,
            signaled: AtomicBool::new(false),
        })
    }

    pub(super) fn read_fd(&self) -> i32 {
        self.fds[0]
    }

    pub(super) fn signal(&self) {
        if !self.signaled.swap(true, Ordering::AcqRel) {
            // SAFETY: writing one byte to our own non-blocking pipe.
            unsafe { libc::write(self.fds[1], [1u8].as_ptr().cast(), 1) };
        }
    }

    /// Drains the pipe, then lowers the flag. In this order a `signal` racing with the drain
    /// is never lost: either its byte stays (it came after the drain), or its event is seen by
    /// the caller's look after the clear, which signals again.
    pub(super) fn clear(&self) {
        let mut buf = [0u8; 64];
        // SAFETY: draining our own non-blocking pipe.
        while unsafe { libc::read(self.fds[0], buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
        self.signaled.store(false, Ordering::Release);
    }
}

#[cfg(unix)]
impl Drop for Notifier {
    fn drop(&mut self) {
        // SAFETY: closing descriptors we own.
        unsafe {
            libc::close(self.fds[0]);
            libc::close(self.fds[1]);
        }
    }
}

#[cfg(not(unix))]
impl Notifier {
    pub(super) fn new() -> Option<Notifier> {
        None
    }
    pub(super) fn read_fd(&self) -> i32 {
        -1
    }
    pub(super) fn signal(&self) {}
    pub(super) fn clear(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The header's word on `cursor_event_free`: the freeing thread's next event takes the
    /// freed one's memory; another thread's does not.
    #[test]
    fn a_freed_events_memory_goes_to_the_next_event_on_that_thread() {
        let make = || cursor_event::handle(Event::new(EventKind::Message, "assistant", json!({}), None));
        std::thread::spawn(move || {
            let first = make();
            unsafe { cursor_event_free(first) };
            let second = make();
            assert_eq!(second, first, "the freed memory is reused");
            unsafe { cursor_event_free(second) };
            // Kept for this thread: another thread's event is not made in it (nor, since it
            // is not freed, anywhere else).
            let elsewhere = std::thread::spawn(move || {
                let e = make();
                unsafe { cursor_event_free(e) };
                e as usize
            });
            assert_ne!(elsewhere.join().unwrap(), second as usize);
            let third = make();
            assert_eq!(third, second, "still kept for this thread");
            unsafe { cursor_event_free(third) };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn has_nul_finds_a_nul_wherever_it_is() {
        for n in 0..=64 {
            let clean: Vec<u8> = (0..n).map(|i| 1 + (i as u8 % 255)).collect();
            assert!(!has_nul(&clean), "{n}");
            // 0x80 and 0x01 bytes next to a NUL: the word test's borrow cases.
            let high = vec![0x80; n];
            assert!(!has_nul(&high), "{n}");
            for at in 0..n {
                for fill in [1u8, 0x80, 0xff] {
                    let mut t = vec![fill; n];
                    t[at] = 0;
                    assert!(has_nul(&t), "{n} {at} {fill}");
                }
            }
        }
    }

    /// The C enums carry the Rust values (and 0 for "invalid"), so the two cannot drift apart.
    #[test]
    fn c_enums_carry_the_rust_values() {
        use cursor_run_status_t::*;
        for (rust, c) in [
            (RunStatus::Running, CURSOR_RUN_RUNNING),
            (RunStatus::Finished, CURSOR_RUN_FINISHED),
            (RunStatus::Error, CURSOR_RUN_ERROR),
            (RunStatus::Cancelled, CURSOR_RUN_CANCELLED),
            (RunStatus::Expired, CURSOR_RUN_EXPIRED),
        ] {
            assert_eq!(rust as i32, c as i32);
        }
        use cursor_event_kind_t::*;
        for (rust, c) in [
            (EventKind::Message, CURSOR_EVENT_MESSAGE),
            (EventKind::Delta, CURSOR_EVENT_DELTA),
            (EventKind::Step, CURSOR_EVENT_STEP),
            (EventKind::Result, CURSOR_EVENT_RESULT),
        ] {
            assert_eq!(rust as i32, c as i32);
        }
        assert_eq!(CURSOR_RUN_INVALID as i32, 0);
        assert_eq!(CURSOR_EVENT_INVALID as i32, 0);
    }

    #[test]
    fn event_strings_static_for_common_types_copied_for_others() {
        let known = cursor_event::new(Event::new(EventKind::Message, "assistant", json!({}), None));
        assert!(matches!(known.r#type, Cow::Borrowed(_)));
        assert_eq!(known.r#type(), c"assistant");
        let payload = json!({"message": {"content": [{"type": "text", "text": "hi"}]}});
        let other = cursor_event::new(Event::new(EventKind::Message, "future_type", payload, Some("7".into())));
        assert!(matches!(other.r#type, Cow::Owned(_)));
        assert_eq!(other.r#type(), c"future_type");
        assert_eq!(other.offset().map(CString::as_c_str), Some(c"7"));
        assert_eq!(other.text(), None, "only assistant messages carry text");
        let text = cursor_event::new(Event::new(
            EventKind::Message,
            "assistant",
            json!({"message": {"content": [{"type": "text", "text": "hi"}]}}),
            None,
        ));
        assert_eq!(text.text(), Some(c"hi"));
        assert_eq!(
            text.json().to_str().unwrap(),
            r#"{"message":{"content":[{"text":"hi","type":"text"}]}}"#
        );
    }

    #[test]
    fn event_texts_short_inline_long_or_with_a_nul_owned() {
        let event = |t: &str| {
            let payload = json!({"message": {"content": [{"type": "text", "text": t}]}});
            cursor_event::new(Event::new(EventKind::Message, "assistant", payload, None))
        };
        let fits = "x".repeat(INLINE_TEXT);
        let long = "y".repeat(INLINE_TEXT + 1);
        let (e, l, n, empty) = (event(&fits), event(&long), event("a\0b"), event(""));
        assert!(matches!(e.text, CText::Inline(..)));
        assert_eq!(e.text().unwrap().to_str().unwrap(), fits);
        assert!(matches!(l.text, CText::Heap(_)));
        assert_eq!(l.text().unwrap().to_str().unwrap(), long);
        // A NUL inside the text is dropped, as everywhere a string goes to C.
        assert!(matches!(n.text, CText::Heap(_)));
        assert_eq!(n.text(), Some(c"ab"));
        assert_eq!(empty.text(), None);
    }
}
