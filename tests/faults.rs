//! Fault injection: the bridge killed (SIGKILL) or stopped (SIGSTOP) at each phase, and a peer
//! that breaks the wire. Each case asserts the documented error kind within its bound, then that
//! nothing leaked (threads, descriptors, the bridge's processes and token directory) and that
//! the next client works.
//!
//! The matrix (R = real bridge, D = the double, P = a fake peer in this file; cases in
//! `tests/bounds.rs` are marked so):
//!
//! | phase | SIGKILL | SIGSTOP |
//! | --- | --- | --- |
//! | launch (before ready) | `kill_at_launch` (R) | bounds.rs `a_start_that_never_becomes_ready…` (R) |
//! | handshake (ready line seen, `SetToolCallback`) | `kill_at_handshake` (R) | `stop_at_handshake` (R) |
//! | unary call | `kill_during_a_unary_call` (R) | bounds.rs `unary_call_to_a_stopped_bridge…` (R) |
//! | stream open (`Send`) | `kill_during_a_stream_open` (R) | bounds.rs `send_to_a_stopped_bridge…` (D) |
//! | mid-stream | `kill_mid_stream` (D); exit by itself: `exit_mid_stream` (D) | bounds.rs `a_stream_whose_bridge_stops…` (D) |
//! | recovery (`ObserveRun` after a cut) | `kill_during_recovery` (D) | bounds.rs `recovery_against_a_stopped_bridge…` (D) |
//! | tool call (host handler running) | `kill_during_a_tool_call` (D) | `stop_during_a_tool_call` (D) |
//! | store call (host store running) | `kill_during_a_store_call` (R) | `stop_during_a_store_call` (R) |
//! | shutdown (client free) | `kill_at_shutdown` (R) | `stop_at_shutdown` (R) |
//!
//! | wire fault (fake peer) | unary call | stream |
//! | --- | --- | --- |
//! | truncated frame / body | `truncated_unary_body` | `truncated_frame` (no run id yet), `truncated_frame_recovers` (live run: re-attached) |
//! | frame over the cap (`maxFrameBytes`) | — (64 MiB body cap) | `frame_over_the_cap` |
//! | bad end-of-stream (not JSON, wrong flags, EOF without end) | — | `bad_end_of_stream` |
//! | response that never ends (head then silence; a byte at a time) | `unary_response_that_never_ends` | `stream_that_never_ends` |
//! | peer that accepts and never reads | `peer_that_never_reads` (ping) | `peer_that_never_reads` (big `Send`) |
//!
//! Bounds come from `include/cursor_sdk.h` and `bindings/c/README.md` ("Guarantees"): unary calls
//! and stream opens end at `requestTimeoutMs`, a silent stream at `streamIdleTimeoutMs` plus a
//! re-attach, a free after ~1 s plus a few; a bridge that dies is reported as `BridgeExited` by
//! the call that notices, at once. One test (`fault_matrix`) runs the cases in sequence, so the
//! process's thread and descriptor counts are the running case's.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{alive, eventually, Sandbox};
use cursor_sdk::{Client, ClientOptions, Error, ErrorKind, Next, Run, RunStatus, Store, Tool};
use serde_json::{json, Value};

/// Short deadlines keep the file inside its time budget.
const REQUEST_MS: u64 = 1500;
const IDLE_MS: u64 = 1500;
/// For kill cases: long enough that "at once" and "at the timeout" cannot be confused.
const SLOW_REQUEST_MS: u64 = 6000;
/// What stopping a bridge that does not answer takes (`Shutdown` or TERM waits ~1 s).
const STOP: Duration = Duration::from_millis(1200);
/// Slack for a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(1500);
/// How soon a call must report a bridge that died under it.
const AT_ONCE: Duration = Duration::from_millis(1000);

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// One case: the lock that serializes this file, its sandbox, and the counts to come back to.
struct Case {
    sb: Sandbox,
    threads: usize,
    fds: usize,
    _serial: MutexGuard<'static, ()>,
}

fn case() -> Case {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    static WARM: std::sync::Once = std::sync::Once::new();
    // Whatever the library starts once per process (not per client) is not a leak.
    WARM.call_once(|| {
        let sb = Sandbox::new();
        let c = Client::new(sb.double_options()).unwrap();
        c.ping().unwrap();
        drop(c);
    });
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path().join("tmp")).unwrap();
    Case {
        sb,
        threads: common::thread_count(),
        fds: fd_count(),
        _serial: serial,
    }
}

fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A bridge process seen alive, and its process group.
#[derive(Clone, Copy, Debug)]
struct Proc {
    pid: u32,
    pgid: i32,
}

fn proc_of(pid: u32) -> Proc {
    let pgid = unsafe { libc::getpgid(pid as libc::pid_t) };
    assert!(pgid > 0, "bridge {pid} has no process group");
    Proc { pid, pgid }
}

fn bridge(c: &Client) -> Proc {
    proc_of(c.bridge_pid().expect("a launched bridge"))
}

fn signal(p: Proc, sig: i32) {
    unsafe { libc::kill(p.pid as libc::pid_t, sig) };
}

/// Resumes a stopped process when dropped, so a failing case leaves nothing stopped.
struct Stopped(Proc);

impl Stopped {
    fn new(p: Proc) -> Stopped {
        signal(p, libc::SIGSTOP);
        Stopped(p)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, libc::SIGCONT);
    }
}

impl Case {
    fn tmp(&self) -> PathBuf {
        self.sb.path().join("tmp")
    }

    /// Options for a launched bridge (the double or the real one) with this case's temp dir.
    fn options(&self, double: bool, request_ms: u64) -> ClientOptions {
        let mut o = if double {
            self.sb.double_options()
        } else {
            self.sb.options()
        };
        o.bridge_env
            .insert("TMPDIR".into(), self.tmp().to_string_lossy().into_owned());
        o.request_timeout_ms = Some(request_ms);
        o.stream_idle_timeout_ms = Some(IDLE_MS);
        o.startup_timeout_ms = Some(15_000);
        o
    }

    fn client(&self, double: bool, request_ms: u64) -> Client {
        Client::new(self.options(double, request_ms)).unwrap()
    }

    /// A launcher script in the sandbox.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.sb.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Nothing of the case is left: the bridges' processes and groups are gone, no token
    /// directory remains, and threads and descriptors are back to where the case began.
    fn assert_clean(&self, procs: &[Proc]) {
        for p in procs {
            assert!(
                eventually(Duration::from_secs(5), || !alive(p.pid)),
                "bridge {} still exists (or is an unreaped zombie)",
                p.pid
            );
            assert!(
                eventually(Duration::from_secs(5), || unsafe { libc::kill(-p.pgid, 0) } != 0),
                "process group {} still has members",
                p.pgid
            );
        }
        let left = || -> Vec<String> {
            std::fs::read_dir(self.tmp())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("cursor-sdk-bridge-"))
                .collect()
        };
        assert!(
            eventually(Duration::from_secs(5), || left().is_empty()),
            "token directories left behind: {:?}",
            left()
        );
        let threads = || common::thread_count();
        assert!(
            eventually(Duration::from_secs(5), || threads() <= self.threads),
            "threads: {} now, {} before the case: {:?}",
            threads(),
            self.threads,
            thread_names()
        );
        assert!(
            eventually(Duration::from_secs(5), || fd_count() <= self.fds),
            "descriptors: {} now, {} before the case: {:?}",
            fd_count(),
            self.fds,
            fd_targets()
        );
    }

    /// A fresh client works (a turn on the double: quick, and all that is in question is this
    /// process's state), and leaves nothing behind either.
    fn assert_next_client_works(&self) {
        let c = self.client(true, 10_000);
        works(&c, true);
        let p = bridge(&c);
        free(c);
        self.assert_clean(&[p]);
    }

    fn clean_and_next(&self, procs: &[Proc]) {
        self.assert_clean(procs);
        self.assert_next_client_works();
    }
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

fn fd_targets() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.display().to_string())
        .collect()
}

fn model() -> cursor_sdk::proto::AgentOptions {
    cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

/// A client call works end to end: a finished turn on the double, a ping and a create on the
/// real bridge (which cannot run a model turn offline).
fn works(c: &Client, double: bool) {
    c.ping().unwrap();
    let agent = c.create_agent(model()).unwrap();
    if double {
        let r = agent.send_text("scenario:normal").unwrap().wait().unwrap();
        assert_eq!(r.status, RunStatus::Finished, "{r:?}");
    }
}

/// What `cursor_client_free` does: stops the bridge (whatever clones remain) and drops.
fn free(c: Client) {
    let pid = c.bridge_pid();
    c.shutdown();
    drop(c);
    if let Some(pid) = pid {
        assert!(!running(pid), "bridge {pid} still runs after the free returned");
    }
}

/// True while `pid` exists and is not a zombie (dead, waiting for its parent to reap it).
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
    !matches!(state, Some('Z' | 'X'))
}

/// Runs `f`, asserting it returns within `bound` (plus the margin); gives its value and time.
fn within<T>(bound: Duration, what: &str, f: impl FnOnce() -> T) -> (T, Duration) {
    let t0 = Instant::now();
    let v = f();
    let took = t0.elapsed();
    assert!(took <= bound + MARGIN, "{what} took {took:?}; bound {bound:?}");
    eprintln!("fault matrix: {what}: {took:?} (bound {bound:?})");
    (v, took)
}

/// Reads the run until its error (events before it are fine).
fn run_error(run: &Run) -> Error {
    loop {
        match run.next_event(Some(Duration::from_secs(60))) {
            Ok(Next::Event(_)) => continue,
            Ok(other) => panic!("the run ended without an error: {other:?}"),
            Err(e) => break e,
        }
    }
}

/// Starts `f` on a thread and gives the channel its result arrives on.
fn in_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> (mpsc::Receiver<T>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    (rx, h)
}

/// Kills `p` (stopped first, so the call is surely in flight on it) and measures how soon the
/// call on the other thread reports it.
fn kill_and_time<T>(p: Proc, rx: &mpsc::Receiver<T>, what: &str) -> T {
    std::thread::sleep(ms(300));
    within(AT_ONCE, what, || {
        signal(p, libc::SIGKILL);
        rx.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{what}: no return 30 s after the kill"))
    })
    .0
}

// ---------------------------------------------------------------------------------------------
// Signals at each phase.

fn kill_at_launch() {
    let k = case();
    let pidfile = k.sb.path().join("launcher.pid");
    let script = k.script(
        "killed-launcher",
        &format!(
            "echo $$ > '{}'\nkill -KILL $$\nexec '{}' \"$@\"\n",
            pidfile.display(),
            common::real_bridge().display()
        ),
    );
    let mut o = k.options(false, REQUEST_MS);
    o.bridge_path = Some(script);
    let c = Client::new(o).unwrap();
    let (e, _) = within(AT_ONCE, "launch, SIGKILL", || c.start().unwrap_err());
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed, "{e}");
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    free(c);
    // The launcher was its own group leader; reaped, it leaves neither pid nor group.
    k.clean_and_next(&[Proc { pid, pgid: pid as i32 }]);
}

/// A launcher that starts the real bridge and sends `sig` to it when its ready line comes,
/// before the library sees that line: the library's first call after the ready line (the
/// handshake) meets the signalled bridge.
fn handshake_launcher(k: &Case, sig: &str) -> (PathBuf, PathBuf) {
    let pidfile = k.sb.path().join("node.pid");
    let script = k.script(
        "handshake-launcher",
        &format!(
            r#"'{bridge}' "$@" 2>&1 >/dev/null | while IFS= read -r line; do
  case "$line" in
    *"cursor-sdk-bridge ready"*)
      pid=${{line#*\"pid\":}}; pid=${{pid%%,*}}
      echo "$pid" > '{pidfile}'
      kill -{sig} "$pid" ;;
  esac
  printf '%s\n' "$line" >&2
done
"#,
            bridge = common::real_bridge().display(),
            pidfile = pidfile.display(),
        ),
    );
    (script, pidfile)
}

fn with_tool(c: &Client) {
    c.add_tool(Tool::new("noop", "", json!({"type":"object"}), |_| Ok(json!("ok"))))
        .unwrap();
}

/// Pings a client whose launcher signals the bridge at its ready line. Gives the client, the
/// ping's error, the time from the ready line (when the pid file appears) to that error, and
/// the node's pid.
fn handshake(k: &Case, sig: &str, request_ms: u64) -> (Client, Error, Duration, u32) {
    let (script, pidfile) = handshake_launcher(k, sig);
    let mut o = k.options(false, request_ms);
    o.bridge_path = Some(script);
    let c = Client::new(o).unwrap();
    // With a tool, connecting makes a `SetToolCallback` call right after the ready line.
    with_tool(&c);
    let c2 = c.clone();
    let (rx, h) = in_thread(move || c2.ping());
    let node = || -> Option<u32> { std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok() };
    assert!(
        eventually(Duration::from_secs(20), || node().is_some()),
        "the bridge never printed its ready line"
    );
    let ready = Instant::now();
    let e = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap_err();
    let took = ready.elapsed();
    h.join().unwrap();
    (c, e, took, node().unwrap())
}

fn kill_at_handshake() {
    let k = case();
    let (c, e, took, node) = handshake(&k, "KILL", SLOW_REQUEST_MS);
    eprintln!("fault matrix: handshake, SIGKILL: {took:?} from the ready line (bound {AT_ONCE:?})");
    assert!(
        took <= AT_ONCE + MARGIN,
        "the dead bridge was noticed only after {took:?}"
    );
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    within(Duration::from_secs(1), "free after a handshake's bridge died", || {
        free(c)
    });
    assert!(!alive(node));
    k.clean_and_next(&[]);
}

fn stop_at_handshake() {
    let k = case();
    let (c, e, took, node) = handshake(&k, "STOP", REQUEST_MS);
    let p = proc_of(node);
    let _cont = Stopped(p);
    // The failed handshake stops the bridge before the call returns: ~1 s more, as a free.
    let bound = ms(REQUEST_MS) + STOP;
    eprintln!("fault matrix: handshake, SIGSTOP: {took:?} from the ready line (bound {bound:?})");
    assert!(took <= bound + MARGIN, "took {took:?}");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    within(Duration::from_secs(4), "free after a stopped handshake", || free(c));
    k.clean_and_next(&[p]);
}

/// A bridge that exits on its own mid-stream (the double's `die:3`: exit code 3).
fn exit_mid_stream() {
    let k = case();
    let c = k.client(true, SLOW_REQUEST_MS);
    let agent = c.create_agent(model()).unwrap();
    let p = bridge(&c);
    let run = agent.send_text("scenario:die:3").unwrap();
    let (e, _) = within(AT_ONCE, "mid-stream, bridge exits", || run_error(&run));
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    assert_eq!(run.status(), RunStatus::Error);
    drop((run, agent));
    free(c);
    k.clean_and_next(&[p]);
}

fn kill_during_a_unary_call() {
    let k = case();
    let c = k.client(false, SLOW_REQUEST_MS);
    c.ping().unwrap();
    let p = bridge(&c);
    let _stop = Stopped::new(p);
    let c2 = c.clone();
    let (rx, h) = in_thread(move || c2.list_agents(Default::default()).map(drop));
    let e = kill_and_time(p, &rx, "unary call, SIGKILL").unwrap_err();
    h.join().unwrap();
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    // The same client starts a new bridge on its next call.
    c.ping().unwrap();
    let second = bridge(&c);
    assert_ne!(second.pid, p.pid);
    free(c);
    k.clean_and_next(&[p, second]);
}

fn kill_during_a_stream_open() {
    let k = case();
    let c = k.client(false, SLOW_REQUEST_MS);
    let agent = c.create_agent(model()).unwrap();
    let p = bridge(&c);
    let _stop = Stopped::new(p);
    let (rx, h) = in_thread(move || agent.send_text("hello").map(drop));
    let e = kill_and_time(p, &rx, "stream open, SIGKILL").unwrap_err();
    h.join().unwrap();
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    free(c);
    k.clean_and_next(&[p]);
}

fn kill_mid_stream() {
    let k = case();
    let c = k.client(true, SLOW_REQUEST_MS);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    assert!(matches!(run.next_event(None).unwrap(), Next::Event(_)));
    let p = bridge(&c);
    let (e, _) = within(AT_ONCE, "mid-stream, SIGKILL", || {
        signal(p, libc::SIGKILL);
        run_error(&run)
    });
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    assert_eq!(run.status(), RunStatus::Error);
    assert!(matches!(run.next_event(Some(Duration::ZERO)), Ok(Next::End)));
    drop((run, agent));
    // The client recovers with a new bridge.
    works(&c, true);
    let second = bridge(&c);
    free(c);
    k.clean_and_next(&[p, second]);
}

fn kill_during_recovery() {
    // As bounds.rs's stopped recovery: a second client reaches the bridge through a proxy the
    // test cuts while the bridge is stopped, so the re-attach is in flight; then the bridge dies.
    let k = case();
    let owner = k.client(true, SLOW_REQUEST_MS);
    let endpoint = owner.bridge_endpoint().unwrap();
    let p = bridge(&owner);
    let proxy = common::CutProxy::new(&endpoint.url);
    let c = Client::new(ClientOptions {
        bridge_url: Some(proxy.url.clone()),
        bridge_token: Some(endpoint.token.clone()),
        workspace: Some(k.sb.path()),
        api_key: Some("test-dummy-key".into()),
        request_timeout_ms: Some(SLOW_REQUEST_MS),
        stream_idle_timeout_ms: Some(SLOW_REQUEST_MS),
        ..Default::default()
    })
    .unwrap();
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    assert!(matches!(run.next_event(None).unwrap(), Next::Event(_)));
    let _stop = Stopped::new(p);
    proxy.cut();
    std::thread::sleep(ms(300));
    let (e, _) = within(AT_ONCE, "recovery, SIGKILL", || {
        signal(p, libc::SIGKILL);
        run_error(&run)
    });
    // An attached client cannot see the process: the bridge's end is a lost connection.
    assert_eq!(e.kind, ErrorKind::Transport, "{e}");
    assert_eq!(run.status(), RunStatus::Error);
    drop((run, agent, c, proxy, owner));
    k.clean_and_next(&[p]);
}

/// A tool whose handler reports that it runs and then waits to be released.
fn held_tool(c: &Client) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let (started_tx, release_rx) = (Mutex::new(started_tx), Mutex::new(release_rx));
    c.add_tool(Tool::new("hold", "", json!({"type":"object"}), move |_| {
        let _ = started_tx.lock().unwrap().send(());
        let _ = release_rx.lock().unwrap().recv_timeout(Duration::from_secs(20));
        Ok(json!("released"))
    }))
    .unwrap();
    (started, release)
}

fn kill_during_a_tool_call() {
    let k = case();
    let c = k.client(true, SLOW_REQUEST_MS);
    let (started, release) = held_tool(&c);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:tool:hold").unwrap();
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the tool was never called");
    let p = bridge(&c);
    let (e, _) = within(AT_ONCE, "tool call, SIGKILL", || {
        signal(p, libc::SIGKILL);
        run_error(&run)
    });
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    // The handler's answer now goes nowhere; that must not hurt.
    release.send(()).unwrap();
    drop((run, agent));
    within(Duration::from_secs(3), "free after a tool call's bridge died", || {
        free(c)
    });
    k.clean_and_next(&[p]);
}

fn stop_during_a_tool_call() {
    let k = case();
    let c = k.client(true, REQUEST_MS);
    let (started, release) = held_tool(&c);
    let agent = c.create_agent(model()).unwrap();
    let run = agent.send_text("scenario:tool:hold").unwrap();
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the tool was never called");
    let p = bridge(&c);
    let stop = Stopped::new(p);
    release.send(()).unwrap();
    // Silent from here on: the idle timeout, then a re-attach that gets no answer.
    let bound = ms(IDLE_MS + IDLE_MS.max(REQUEST_MS));
    let (e, _) = within(bound, "tool call, SIGSTOP", || run_error(&run));
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    drop((run, agent));
    within(
        Duration::from_secs(4),
        "free with a stopped bridge after a tool call",
        || free(c),
    );
    drop(stop);
    k.clean_and_next(&[p]);
}

/// A store whose `agents.list` reports that it runs and waits to be released; every other call
/// answers as an empty store would.
struct HeldStore {
    started: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Store for HeldStore {
    fn call(&self, substore: &str, method: &str, _input: Value) -> Result<Option<Value>, String> {
        if (substore, method) == ("agents", "list") {
            let _ = self.started.lock().unwrap().send(());
            let _ = self.release.lock().unwrap().recv_timeout(Duration::from_secs(20));
            return Ok(Some(json!({"items": []})));
        }
        Ok(None)
    }
}

fn held_store_client(k: &Case, request_ms: u64) -> (Client, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let store = HeldStore {
        started: Mutex::new(started_tx),
        release: Mutex::new(release_rx),
    };
    let c = Client::with_store(k.options(false, request_ms), Arc::new(store)).unwrap();
    c.ping().unwrap();
    (c, started, release)
}

fn kill_during_a_store_call() {
    let k = case();
    let (c, started, release) = held_store_client(&k, SLOW_REQUEST_MS);
    let p = bridge(&c);
    let c2 = c.clone();
    let (rx, h) = in_thread(move || c2.list_agents(Default::default()).map(drop));
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the store was never called");
    let (e, _) = within(AT_ONCE, "store call, SIGKILL", || {
        signal(p, libc::SIGKILL);
        rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap_err()
    });
    h.join().unwrap();
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    release.send(()).unwrap();
    within(Duration::from_secs(3), "free after a store call's bridge died", || {
        free(c)
    });
    k.clean_and_next(&[p]);
}

fn stop_during_a_store_call() {
    let k = case();
    let (c, started, release) = held_store_client(&k, REQUEST_MS);
    let p = bridge(&c);
    let c2 = c.clone();
    let (rx, h) = in_thread(move || c2.list_agents(Default::default()).map(drop));
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the store was never called");
    let t0 = Instant::now();
    let stop = Stopped::new(p);
    release.send(()).unwrap();
    let e = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap_err();
    let took = t0.elapsed();
    h.join().unwrap();
    eprintln!("fault matrix: store call, SIGSTOP: {took:?} (bound {REQUEST_MS} ms from the call)");
    assert!(took <= ms(REQUEST_MS) + MARGIN, "took {took:?}");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    within(
        Duration::from_secs(4),
        "free with a stopped bridge after a store call",
        || free(c),
    );
    drop(stop);
    k.clean_and_next(&[p]);
}

fn kill_at_shutdown() {
    let k = case();
    // Dies before the free (nothing noticed it yet).
    let c = k.client(false, REQUEST_MS);
    c.ping().unwrap();
    let first = bridge(&c);
    signal(first, libc::SIGKILL);
    within(Duration::from_secs(1), "free of a client whose bridge died", || free(c));
    // Dies during the free (stopped, so `Shutdown` waits; killed within its grace).
    let c = k.client(false, REQUEST_MS);
    c.ping().unwrap();
    let second = bridge(&c);
    let stop = Stopped::new(second);
    let (rx, h) = in_thread(move || free(c));
    std::thread::sleep(ms(300));
    within(Duration::from_secs(1), "free, bridge killed during it", || {
        signal(second, libc::SIGKILL);
        rx.recv_timeout(Duration::from_secs(30)).unwrap()
    });
    h.join().unwrap();
    drop(stop);
    k.clean_and_next(&[first, second]);
}

fn stop_at_shutdown() {
    let k = case();
    let c = k.client(false, REQUEST_MS);
    c.ping().unwrap();
    let p = bridge(&c);
    let stop = Stopped::new(p);
    // `Shutdown` gets 1 s, then signals; a stopped node dies only by SIGKILL.
    within(Duration::from_secs(4), "free, bridge stopped", || free(c));
    drop(stop);
    k.clean_and_next(&[p]);
}

// ---------------------------------------------------------------------------------------------
// Wire faults: a fake peer on loopback, with a client attached to it.

/// What the fake peer does with a request, by its path.
enum Reply {
    /// Writes these bytes, then closes.
    Bytes(Vec<u8>),
    /// Writes the bytes, then the trickle one byte at a time, 100 ms apart.
    Trickle(Vec<u8>, Vec<u8>),
    /// Writes the bytes, then holds the connection silently.
    Hold(Vec<u8>),
    /// Accepts and never reads the request.
    NeverRead,
}

/// A loopback server that answers each request as its script says. Dropping it ends and joins
/// all its threads.
struct FakePeer {
    url: String,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl FakePeer {
    fn new(script: impl Fn(&str) -> Reply + Send + Sync + 'static) -> FakePeer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script);
        let s2 = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !s2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (stop, script) = (s2.clone(), script.clone());
                        conns.push(std::thread::spawn(move || serve(sock, &*script, &stop)));
                    }
                    Err(_) => std::thread::sleep(ms(5)),
                }
            }
            conns
        });
        FakePeer {
            url,
            stop,
            accept: Some(accept),
        }
    }

    fn client(&self, k: &Case, max_frame: Option<usize>) -> Client {
        Client::new(ClientOptions {
            bridge_url: Some(self.url.clone()),
            bridge_token: Some("fake-token".into()),
            workspace: Some(k.sb.path()),
            request_timeout_ms: Some(REQUEST_MS),
            stream_idle_timeout_ms: Some(IDLE_MS),
            max_frame_bytes: max_frame,
            ..Default::default()
        })
        .unwrap()
    }
}

impl Drop for FakePeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.accept.take() {
            for c in a.join().unwrap() {
                c.join().unwrap();
            }
        }
    }
}

/// Sleeps `d` in small steps; false when the peer is stopping.
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(ms(10));
    }
    true
}

fn serve(mut sock: TcpStream, script: &(dyn Fn(&str) -> Reply + Send + Sync), stop: &AtomicBool) {
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(ms(100))).unwrap();
    // Only the request line is needed to choose; a never-reading peer must not read even that,
    // so it peeks.
    let mut head = vec![0u8; 512];
    let path = loop {
        match sock.peek(&mut head) {
            Ok(n) if n > 0 => {
                let line = String::from_utf8_lossy(&head[..n]).into_owned();
                if let Some(p) = line.split(' ').nth(1).filter(|_| line.contains("\r\n")) {
                    break p.to_string();
                }
            }
            Ok(_) => return,
            Err(_) => {}
        }
        if !pause(ms(5), stop) {
            return;
        }
    };
    let reply = script(&path);
    if !matches!(reply, Reply::NeverRead) {
        read_request(&mut sock, stop);
    }
    let _ = sock.set_write_timeout(Some(Duration::from_secs(2)));
    match reply {
        Reply::Bytes(b) => {
            let _ = sock.write_all(&b);
        }
        Reply::Trickle(b, rest) => {
            let _ = sock.write_all(&b);
            for byte in rest {
                if !pause(ms(100), stop) || sock.write_all(&[byte]).is_err() {
                    break;
                }
            }
            pause(Duration::from_secs(60), stop);
        }
        Reply::Hold(b) => {
            let _ = sock.write_all(&b);
            pause(Duration::from_secs(60), stop);
        }
        Reply::NeverRead => {
            pause(Duration::from_secs(60), stop);
        }
    }
    let _ = sock.shutdown(Shutdown::Both);
}

/// Reads one request (head and Content-Length body).
fn read_request(sock: &mut TcpStream, stop: &AtomicBool) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut need: Option<usize> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(n) = need {
            if buf.len() >= n {
                return;
            }
        } else if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            need = Some(end + 4 + len);
            continue;
        }
        match sock.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }
}

/// A response head; `length` None means the body runs to the close.
fn head(content_type: &str, length: Option<usize>) -> Vec<u8> {
    let len = length.map(|n| format!("Content-Length: {n}\r\n")).unwrap_or_default();
    format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{len}Connection: close\r\n\r\n").into_bytes()
}

fn stream_head() -> Vec<u8> {
    head("application/connect+proto", None)
}

fn frame(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// One ordinary stream message frame: an `assistant` message.
fn message_frame() -> Vec<u8> {
    use cursor_sdk::proto::{run_stream_message::Envelope, RunStreamMessage, SdkMessage};
    use prost::Message;
    let m = RunStreamMessage {
        envelope: Some(Envelope::SdkMessage(SdkMessage {
            r#type: "assistant".into(),
            message: None,
        })),
        offset: Some("1".into()),
    };
    frame(0, &m.encode_to_vec())
}

fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Sends on a fake agent and reads the run to its error: the first frame opens the run, the
/// fault comes after it.
fn stream_fault(peer_stream: Vec<u8>, max_frame: Option<usize>, bound: Duration, what: &str) -> Error {
    let k = case();
    let body = Arc::new(peer_stream);
    let peer = FakePeer::new(move |_| Reply::Bytes((*body).clone()));
    let c = peer.client(&k, max_frame);
    let agent = c.agent_handle("agent-fake", None);
    let run = agent.send_text("hi").unwrap();
    let (e, _) = within(bound, what, || run_error(&run));
    assert_eq!(run.status(), RunStatus::Error);
    drop((run, agent, c, peer));
    k.assert_clean(&[]);
    e
}

fn truncated_frame() {
    for (cut, what) in [(2, "inside a frame header"), (9, "inside a frame")] {
        let next = message_frame();
        let stream = concat(&[&stream_head(), &message_frame(), &next[..cut]]);
        let e = stream_fault(stream, None, AT_ONCE, &format!("stream cut {what}"));
        assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
        assert!(e.message.contains(what), "{e}");
    }
    case().assert_next_client_works();
}

/// A proto `sdk_message` frame of this type and JSON payload, with an offset.
fn sdk_frame(ty: &str, payload: Value, offset: u32) -> Vec<u8> {
    use cursor_sdk::proto::{run_stream_message::Envelope, RunStreamMessage, SdkMessage};
    use prost::Message;
    let m = RunStreamMessage {
        envelope: Some(Envelope::SdkMessage(SdkMessage {
            r#type: ty.into(),
            message: Some(serde_json::from_value(payload).unwrap()),
        })),
        offset: Some(offset.to_string()),
    };
    frame(0, &m.encode_to_vec())
}

/// The result and done frames of a finished run, then the end frame.
fn finished_frames(run_id: &str) -> Vec<u8> {
    use cursor_sdk::proto::{
        run_stream_message::Envelope, RunResult, RunStreamDone, RunStreamMessage, RunStreamResult,
    };
    use prost::Message;
    let finished = cursor_sdk::proto::RunLifecycleStatus::Finished as i32;
    let result = RunStreamMessage {
        envelope: Some(Envelope::Result(RunStreamResult {
            agent_id: "agent-fake".into(),
            run_id: run_id.into(),
            status: finished,
            result: Some(RunResult {
                run_id: run_id.into(),
                agent_id: "agent-fake".into(),
                status: finished,
                result: "done".into(),
                ..Default::default()
            }),
            ..Default::default()
        })),
        offset: None,
    };
    let done = RunStreamMessage {
        envelope: Some(Envelope::Done(RunStreamDone {
            agent_id: "agent-fake".into(),
            run_id: run_id.into(),
        })),
        offset: None,
    };
    concat(&[
        &frame(0, &result.encode_to_vec()),
        &frame(0, &done.encode_to_vec()),
        &frame(2, b"{}"),
    ])
}

/// A truncated frame in a live run's `Send` stream: the library re-attaches with `ObserveRun`
/// (the recovery rule) and delivers the rest once; when that stream is cut too, the run ends
/// with the protocol error.
fn truncated_frame_recovers() {
    let msg = |n: u32| sdk_frame("assistant", json!({"run_id": "run-f", "n": n}), n);
    let cut = msg(3);
    let send = concat(&[&stream_head(), &msg(1), &msg(2), &cut[..cut.len() - 4]]);
    let log = concat(&[
        &stream_head(),
        &sdk_frame("request", json!({"run_id": "run-f"}), 1),
        &msg(1),
        &msg(2),
        &msg(3),
        &finished_frames("run-f"),
    ]);
    for observe_ok in [true, false] {
        let k = case();
        let observed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (send, log, o2) = (send.clone(), log.clone(), observed.clone());
        let peer = FakePeer::new(move |path| {
            if path.ends_with("/ObserveRun") {
                o2.fetch_add(1, Ordering::SeqCst);
                Reply::Bytes(if observe_ok { log.clone() } else { send.clone() })
            } else {
                Reply::Bytes(send.clone())
            }
        });
        let c = peer.client(&k, None);
        let agent = c.agent_handle("agent-fake", None);
        let run = agent.send_text("hi").unwrap();
        let what = if observe_ok {
            "truncated frame, recovered"
        } else {
            "truncated frame, recovery cut too"
        };
        let (events, _) = within(AT_ONCE, what, || {
            let mut events = Vec::new();
            loop {
                match run.next_event(Some(Duration::from_secs(30))) {
                    Ok(Next::Event(e)) => events.push((e.r#type().to_string(), e.payload()["n"].as_f64())),
                    Ok(Next::End) => break Ok(events),
                    Ok(other) => panic!("{other:?}"),
                    Err(e) => break Err(e),
                }
            }
        });
        assert!(observed.load(Ordering::SeqCst) >= 1, "no re-attach was tried");
        if observe_ok {
            let events = events.unwrap();
            let n = |t: &str, n: f64| (t.to_string(), Some(n));
            assert_eq!(
                events,
                [
                    n("assistant", 1.0),
                    n("assistant", 2.0),
                    n("assistant", 3.0),
                    ("result".to_string(), None)
                ],
                "each message once, in order"
            );
            let result = run.wait().unwrap();
            assert_eq!(result.status, RunStatus::Finished, "{result:?}");
        } else {
            let e = events.unwrap_err();
            assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
            assert_eq!(run.status(), RunStatus::Error);
        }
        drop((run, agent, c, peer));
        k.assert_clean(&[]);
    }
}

fn truncated_unary_body() {
    let k = case();
    // Declares 10 bytes, sends 3, closes.
    let peer = FakePeer::new(|_| Reply::Bytes(concat(&[&head("application/proto", Some(10)), b"\x0a\x01a"])));
    let c = peer.client(&k, None);
    let (e, _) = within(AT_ONCE, "unary body cut short", || c.version().unwrap_err());
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    drop((c, peer));
    k.clean_and_next(&[]);
}

fn frame_over_the_cap() {
    // The first frame over a 1 KiB cap fails the send; a later one fails the run; a length of
    // 4 GiB under the default cap fails before anything is allocated.
    let k = case();
    let over = |n: u32| concat(&[&[0u8], &n.to_be_bytes()]);
    let cases: Vec<(Vec<u8>, Option<usize>)> = vec![
        (concat(&[&stream_head(), &over(1025), &[0u8; 64]]), Some(1024)),
        (concat(&[&stream_head(), &over(u32::MAX)]), None),
    ];
    for (bytes, cap) in cases {
        let body = Arc::new(bytes);
        let peer = FakePeer::new(move |_| Reply::Bytes((*body).clone()));
        let c = peer.client(&k, cap);
        let agent = c.agent_handle("agent-fake", None);
        let (e, _) = within(AT_ONCE, "first frame over the cap", || {
            agent.send_text("hi").err().unwrap()
        });
        assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
        assert!(e.message.contains("exceeds"), "{e}");
        drop((agent, c, peer));
    }
    k.clean_and_next(&[]);
    drop(k);
    let stream = concat(&[&stream_head(), &message_frame(), &frame(0, &[0u8; 2048])]);
    let e = stream_fault(stream, Some(1024), AT_ONCE, "later frame over the cap");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.message.contains("exceeds the 1024 byte cap"), "{e}");
}

fn bad_end_of_stream() {
    let cases: [(&[u8], &str); 4] = [
        (&frame(2, b"{not json"), "not JSON"),
        (&frame(3, b"{}"), "compressed"),
        (&frame(0, b"{}"), "undecodable"),
        (b"", "without an end-of-stream frame"),
    ];
    for (end, what) in cases {
        let stream = concat(&[&stream_head(), &message_frame(), end]);
        let e = stream_fault(stream, None, AT_ONCE, &format!("bad end: {what}"));
        assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
        assert!(e.message.contains(what), "{what}: {e}");
    }
    case().assert_next_client_works();
}

fn unary_response_that_never_ends() {
    let k = case();
    let silent = FakePeer::new(|_| Reply::Hold(head("application/proto", Some(10))));
    let trickle = FakePeer::new(|_| Reply::Trickle(head("application/proto", Some(1000)), vec![0x0a; 1000]));
    for (peer, what) in [
        (&silent, "unary: head then silence"),
        (&trickle, "unary: a byte every 100 ms"),
    ] {
        let c = peer.client(&k, None);
        let (e, _) = within(ms(REQUEST_MS), what, || c.version().unwrap_err());
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    }
    drop((silent, trickle));
    k.clean_and_next(&[]);
}

fn stream_that_never_ends() {
    // Silent after the first frame, or a frame that comes a byte at a time: either way no frame
    // for the idle timeout; with no run id to re-attach to, the run ends there.
    let k = case();
    let opened = concat(&[&stream_head(), &message_frame()]);
    let o2 = opened.clone();
    let silent = FakePeer::new(move |_| Reply::Hold(o2.clone()));
    let trickle = FakePeer::new(move |_| Reply::Trickle(opened.clone(), frame(0, &[0x0a; 200])));
    for (peer, what) in [
        (&silent, "stream: silence after a frame"),
        (&trickle, "stream: a byte every 100 ms"),
    ] {
        let c = peer.client(&k, None);
        let agent = c.agent_handle("agent-fake", None);
        let run = agent.send_text("hi").unwrap();
        let (e, _) = within(ms(IDLE_MS + IDLE_MS.max(REQUEST_MS)), what, || run_error(&run));
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    }
    drop((silent, trickle));
    k.clean_and_next(&[]);
}

fn peer_that_never_reads() {
    let k = case();
    let peer = FakePeer::new(|_| Reply::NeverRead);
    let c = peer.client(&k, None);
    let (e, _) = within(ms(REQUEST_MS), "never read: ping", || c.ping().unwrap_err());
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    // 32 MiB cannot sit in the socket buffers: the write itself must give up at the deadline.
    let prompt = "x".repeat(32 << 20);
    let agent = c.agent_handle("agent-fake", None);
    let (e, _) = within(ms(REQUEST_MS), "never read: 32 MiB send", || {
        agent.send_text(&prompt).err().unwrap()
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    drop((agent, c, peer));
    k.clean_and_next(&[]);
}

// ---------------------------------------------------------------------------------------------
// The runner: one test, cases in sequence, so the process's thread and descriptor counts belong
// to the case that runs. `FAULTS_ONLY=name,name` runs a subset (and says so).

const CASES: &[(&str, fn())] = &[
    ("kill_at_launch", kill_at_launch),
    ("kill_at_handshake", kill_at_handshake),
    ("stop_at_handshake", stop_at_handshake),
    ("kill_during_a_unary_call", kill_during_a_unary_call),
    ("kill_during_a_stream_open", kill_during_a_stream_open),
    ("kill_mid_stream", kill_mid_stream),
    ("exit_mid_stream", exit_mid_stream),
    ("kill_during_recovery", kill_during_recovery),
    ("kill_during_a_tool_call", kill_during_a_tool_call),
    ("stop_during_a_tool_call", stop_during_a_tool_call),
    ("kill_during_a_store_call", kill_during_a_store_call),
    ("stop_during_a_store_call", stop_during_a_store_call),
    ("kill_at_shutdown", kill_at_shutdown),
    ("stop_at_shutdown", stop_at_shutdown),
    ("truncated_frame", truncated_frame),
    ("truncated_frame_recovers", truncated_frame_recovers),
    ("truncated_unary_body", truncated_unary_body),
    ("frame_over_the_cap", frame_over_the_cap),
    ("bad_end_of_stream", bad_end_of_stream),
    ("unary_response_that_never_ends", unary_response_that_never_ends),
    ("stream_that_never_ends", stream_that_never_ends),
    ("peer_that_never_reads", peer_that_never_reads),
];

#[test]
fn fault_matrix() {
    let only = std::env::var("FAULTS_ONLY").ok();
    let mut failed = Vec::new();
    let t0 = Instant::now();
    for (name, case) in CASES {
        if only.as_ref().is_some_and(|o| !o.split(',').any(|n| n == *name)) {
            eprintln!("fault matrix: {name}: not selected by FAULTS_ONLY");
            continue;
        }
        let t = Instant::now();
        let ok = std::panic::catch_unwind(case).is_ok();
        eprintln!(
            "fault matrix: case {name}: {} in {:?}",
            if ok { "ok" } else { "FAILED" },
            t.elapsed()
        );
        if !ok {
            failed.push(*name);
        }
    }
    eprintln!("fault matrix: all cases in {:?}", t0.elapsed());
    assert!(failed.is_empty(), "failed fault cases: {failed:?}");
}
