//! One supervised bridge process tree: our child (the supervisor, leader of its own group), the
//! `sh` launcher, node. Owns the two helper threads (stderr drain, reaper) and the stop sequence.
//!
//! Only the process that spawned the tree acts on it. A forked child of the host inherits a copy
//! of this state, but not our threads, and its locks may be frozen in whatever state another
//! thread held them at the fork: there every method checks the pid first and does nothing (no
//! signals, no lifeline shutdown, no clean-up, no waiting, no lock).
//!
//! Liveness is read from `/proc` on Linux; only "no such process" or a zombie state mean dead.
//! Any other failure to read (EMFILE in a host at its fd limit, EACCES, ENOMEM…) means unknown,
//! which counts as alive: declaring a healthy bridge dead would make the client replace it.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{mpsc, Arc};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant, SystemTime};

use once_cell::sync::OnceCell;
use parking_lot::{Condvar, Mutex};

use super::lifeline::{self, Lifeline};
use super::signals;
use super::stderr::{self, LineSink, Startup, StderrShared};
use super::supervisor;
use super::token_dir::TokenDir;
use crate::error::{Error, ErrorKind, Result};

/// Stop budget: graceful 2 + node TERM 1 + group TERM 1.5 + KILL 1 + 2 × 0.5 = 6.5 s at worst
/// (the brief allows 7); typically node exits within ~15 ms of the first signal.
const GRACEFUL_WAIT: Duration = Duration::from_secs(2);
const NODE_TERM_WAIT: Duration = Duration::from_secs(1);
const TERM_WAIT: Duration = Duration::from_millis(1500);
const KILL_WAIT: Duration = Duration::from_secs(1);
const EOF_WAIT: Duration = Duration::from_millis(500);
/// How often liveness of node (not our child, so no notification) is polled while waiting.
const POLL: Duration = Duration::from_millis(5);

#[derive(Default)]
struct State {
    /// The supervisor's exit status, once reaped. The supervisor exits when the launcher does.
    exit: Option<ExitStatus>,
    stderr_eof: bool,
    stopped: bool,
}

pub struct Process {
    /// The process that spawned the tree: the only one that may act on it (see the module doc).
    /// Compared with getpid() rather than bumped by a pthread_atfork handler: that would need a
    /// process-wide registration, and misses children made by raw clone/vfork; getpid is exact
    /// (a child never shares its parent's pid) and costs one syscall.
    owner: libc::pid_t,
    /// When the spawn started: the token directory must be younger.
    spawned_at: SystemTime,
    /// The supervisor's pid, which is also the process group id of the whole tree.
    pgid: libc::pid_t,
    launcher: PathBuf,
    state: Arc<(Mutex<State>, Condvar)>,
    pub stderr: Arc<StderrShared>,
    lifeline: Mutex<Option<Lifeline>>,
    node_pid: OnceCell<libc::pid_t>,
    token_dir: OnceCell<TokenDir>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stderr_thread: ThreadId,
    /// Held for the whole stop sequence: concurrent stops wait for the first, then return.
    stop_lock: Mutex<()>,
}

impl Process {
    /// Starts the supervisor and its helper threads. The receiver yields the ready line (or EOF).
    /// `program` is what the supervisor runs (the launcher, or its node: see `launcher.rs`).
    pub fn spawn(
        launcher: &Path,
        program: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
        sink: Option<LineSink>,
    ) -> Result<(Process, mpsc::Receiver<Startup>)> {
        let start_err =
            |what: &str, e: std::io::Error| Error::new(ErrorKind::BridgeStartFailed, format!("{what}: {e}"));
        let spawned_at = SystemTime::now();
        let (ours, theirs) = lifeline::pair().map_err(|e| start_err("cannot create the lifeline socket", e))?;
        let mut child = supervisor::spawn(program, args, env, theirs)?;
        let pgid = child.id() as libc::pid_t;
        let pipe = child.stderr.take().expect("stderr is piped");

        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = StderrShared::new(sink);
        let (tx, rx) = mpsc::channel();

        // Library threads start with every signal blocked: the host's signals are not ours to take.
        let reaper = {
            let state = state.clone();
            let builder = std::thread::Builder::new();
            signals::with_all_blocked(|| {
                builder.name("cursor-sdk-bridge-reaper".into()).spawn(move || {
                    let status = child.wait().ok();
                    let (m, cv) = &*state;
                    // A failed wait means the child is gone anyway: record a neutral status.
                    m.lock().exit = Some(status.unwrap_or_else(|| ExitStatus::from_raw(0)));
                    cv.notify_all();
                })
            })
        };
        let reaper = match reaper {
            Ok(h) => h,
            Err(e) => {
                // Without a reaper we cannot supervise; take the tree down (lifeline EOF does).
                ours.cut();
                kill_group(pgid, libc::SIGKILL);
                return Err(start_err("cannot start the reaper thread", e));
            }
        };
        let drainer = {
            let state = state.clone();
            let shared = shared.clone();
            let builder = std::thread::Builder::new();
            signals::with_all_blocked(|| {
                builder.name("cursor-sdk-bridge-stderr".into()).spawn(move || {
                    stderr::drain(pipe, shared, tx, move || {
                        let (m, cv) = &*state;
                        m.lock().stderr_eof = true;
                        cv.notify_all();
                    })
                })
            })
        };
        let drainer = match drainer {
            Ok(h) => h,
            Err(e) => {
                ours.cut();
                kill_group(pgid, libc::SIGKILL);
                let _ = reaper.join();
                return Err(start_err("cannot start the stderr thread", e));
            }
        };
        let process = Process {
            // SAFETY: getpid cannot fail.
            owner: unsafe { libc::getpid() },
            spawned_at,
            pgid,
            launcher: launcher.to_path_buf(),
            state,
            stderr: shared,
            lifeline: Mutex::new(Some(ours)),
            node_pid: OnceCell::new(),
            token_dir: OnceCell::new(),
            stderr_thread: drainer.thread().id(),
            threads: Mutex::new(vec![reaper, drainer]),
            stop_lock: Mutex::new(()),
        };
        Ok((process, rx))
    }

    pub fn pgid(&self) -> libc::pid_t {
        self.pgid
    }

    pub fn launcher(&self) -> &Path {
        &self.launcher
    }

    /// Whether this is the process that spawned the tree (false in a forked child of it).
    pub fn owned_here(&self) -> bool {
        // SAFETY: getpid cannot fail.
        unsafe { libc::getpid() == self.owner }
    }

    /// The pid of the process that spawned the tree.
    pub fn owner(&self) -> libc::pid_t {
        self.owner
    }

    /// Records node's pid and, if it is verifiably this launch's (see `token_dir.rs`), the token
    /// directory, and tells the supervisor so that it can clean up even if we are SIGKILLed.
    pub fn announce(&self, node_pid: u32, auth_token_file: &Path, token: &str) {
        let pid = node_pid as libc::pid_t;
        let _ = self.node_pid.set(pid);
        let guard = self.lifeline.lock();
        if let Some(l) = guard.as_ref() {
            l.send_line(&format!("pid={pid}"));
        }
        if let Some(dir) = TokenDir::verify(auth_token_file, token, self.spawned_at) {
            if let (Some(l), Some(s)) = (guard.as_ref(), dir.path().to_str()) {
                l.send_line(&format!("dir={s}"));
            }
            let _ = self.token_dir.set(dir);
        }
    }

    fn node_alive(&self) -> Option<bool> {
        self.node_pid.get().map(|&p| pid_alive_in_group(p, self.pgid))
    }

    /// Everything that matters is gone: the supervisor was reaped and node is dead.
    fn gone(&self, st: &State) -> bool {
        st.exit.is_some() && self.node_alive() != Some(true)
    }

    /// False in a forked child: the bridge is not usable from there.
    pub fn is_alive(&self) -> bool {
        if !self.owned_here() {
            return false;
        }
        let st = self.state.0.lock();
        !st.stopped && st.exit.is_none() && self.node_alive() != Some(false)
    }

    /// The supervisor's exit status if it was reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.state.0.lock().exit
    }

    pub fn stopped(&self) -> bool {
        self.state.0.lock().stopped
    }

    /// Waits until `cond` holds or `dur` passes; returns whether it holds.
    fn wait_until(&self, dur: Duration, cond: impl Fn(&Process, &State) -> bool) -> bool {
        let deadline = Instant::now() + dur;
        let (m, cv) = &*self.state;
        let mut st = m.lock();
        loop {
            if cond(self, &st) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            cv.wait_for(&mut st, POLL.min(deadline - now));
        }
    }

    /// Waits (bounded) for the supervisor to be reaped, e.g. after stderr EOF at start-up.
    pub fn wait_exit(&self, dur: Duration) -> Option<ExitStatus> {
        self.wait_until(dur, |_, st| st.exit.is_some());
        self.exit_status()
    }

    /// The stop sequence: graceful → TERM node and group (and cut the lifeline) → KILL group →
    /// reap → remove the token directory. Idempotent; concurrent callers wait for the first.
    /// Does nothing (and calls nothing) outside the owning process.
    pub fn terminate(&self, graceful: Option<&dyn Fn() -> bool>) {
        if !self.owned_here() {
            return;
        }
        let _stop = self.stop_lock.lock();
        if self.stopped() {
            return;
        }
        let gone = |p: &Process, st: &State| p.gone(st);
        if let Some(g) = graceful {
            let already = self.wait_until(Duration::ZERO, gone);
            // A panic in the caller's closure must not abort the stop.
            if !already && catch_unwind(AssertUnwindSafe(g)).unwrap_or(false) {
                self.wait_until(GRACEFUL_WAIT, gone);
            }
        }
        // TERM node alone first: the launcher (if node is not run directly) then exits, the
        // supervisor reaps it and its watcher and exits, and we reap the supervisor, so every
        // process is reaped by its own parent (signalling the group would orphan them; some
        // container inits reap lazily).
        if let Some(&pid) = self.node_pid.get() {
            if !self.wait_until(Duration::ZERO, gone) && pid_alive_in_group(pid, self.pgid) {
                // SAFETY: plain kill(2); pid checked to be in our group just now.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                self.wait_until(NODE_TERM_WAIT, gone);
            }
        }
        if !self.wait_until(Duration::ZERO, gone) {
            // Node ignores TERM for as long as a Send stream is open, or we do not know node yet
            // (start-up failure): TERM the whole group, and let the supervisor's watcher act too.
            self.cut_lifeline();
            kill_group(self.pgid, libc::SIGTERM);
            // With no node pid, wait for stderr EOF: it means every process holding the pipe
            // (launcher, fake bridges, their children) is gone.
            let known_node = self.node_pid.get().is_some();
            self.wait_until(TERM_WAIT, |p, st| p.gone(st) && (known_node || st.stderr_eof));
        }
        // Whatever ignored TERM: KILL node and the group. The group id cannot have been reused
        // while any member lives.
        if let Some(&pid) = self.node_pid.get() {
            if pid_alive_in_group(pid, self.pgid) {
                // SAFETY: plain kill(2).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        if group_has_live_members(self.pgid) {
            kill_group(self.pgid, libc::SIGKILL);
        }
        self.cut_lifeline();
        self.wait_until(KILL_WAIT, |_, st| st.exit.is_some());
        // The stderr thread ends at EOF; do not wait for ourselves if a log sink called stop.
        if std::thread::current().id() != self.stderr_thread {
            self.wait_until(EOF_WAIT, |_, st| st.stderr_eof);
        }
        self.wait_until(EOF_WAIT, |p, _| !group_has_live_members(p.pgid));
        self.join_finished_threads();
        if let Some(dir) = self.token_dir.get() {
            dir.remove();
        }
        let (m, cv) = &*self.state;
        m.lock().stopped = true;
        cv.notify_all();
    }

    fn cut_lifeline(&self) {
        if let Some(l) = self.lifeline.lock().take() {
            l.cut();
        }
    }

    fn join_finished_threads(&self) {
        let me = std::thread::current().id();
        // A thread that has reported its end (exit status, stderr EOF) only returns after that:
        // joining it is bounded, and waiting for is_finished alone would race with its return.
        let (exited, eof) = {
            let st = self.state.0.lock();
            (st.exit.is_some(), st.stderr_eof)
        };
        let ended = |h: &JoinHandle<()>| {
            let signalled = if h.thread().id() == self.stderr_thread {
                eof
            } else {
                exited
            };
            h.thread().id() != me && (signalled || h.is_finished())
        };
        let mut threads = self.threads.lock();
        let (done, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut *threads).into_iter().partition(ended);
        for h in done {
            let _ = h.join();
        }
        // Unfinished ones (a stray process still holding stderr) end on their own at EOF.
        *threads = pending;
    }

    /// Both helper threads have ended (for tests: no thread outlives a stop). Trivially true in a
    /// forked child, which has none of our threads.
    pub fn threads_finished(&self) -> bool {
        !self.owned_here() || self.threads.lock().iter().all(|h| h.is_finished())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if !self.owned_here() {
            // These threads do not exist in a forked child: detaching their copies is pointless.
            std::mem::forget(std::mem::take(self.threads.get_mut()));
        }
    }
}

fn kill_group(pgid: libc::pid_t, sig: libc::c_int) {
    if pgid > 1 {
        // SAFETY: plain killpg(2) on the group we created.
        unsafe { libc::killpg(pgid, sig) };
    }
}

/// Does any non-zombie process remain in group `pgid`? When unsure (a `/proc` entry we cannot
/// read for a reason other than its process being gone), yes.
#[cfg(target_os = "linux")]
pub fn group_has_live_members(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if pgid <= 1 || unsafe { libc::killpg(pgid, 0) } != 0 && last_error_is(libc::ESRCH) {
        return false;
    }
    // killpg also counts zombies: look at the members themselves.
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.into_iter().any(|entry| {
        let Ok(entry) = entry else {
            return true;
        };
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()) else {
            return false;
        };
        match read_stat(pid) {
            Stat::Gone => false,
            Stat::Unknown => true,
            Stat::Read { zombie, pgrp } => pgrp == pgid && !zombie,
        }
    })
}
#[cfg(not(target_os = "linux"))]
pub fn group_has_live_members(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pgid > 1 && (unsafe { libc::killpg(pgid, 0) } == 0 || !last_error_is(libc::ESRCH))
}

fn last_error_is(errno: libc::c_int) -> bool {
    std::io::Error::last_os_error().raw_os_error() == Some(errno)
}

/// Is `pid` a live (non-zombie) process of group `pgid`? The group check guards against a
/// recycled pid or a ready line naming a process that is not ours (getpgid fails only for a
/// process that is gone, ESRCH, or in another session, EPERM, hence not in our group). Dead
/// means known dead: failing to read `/proc` answers alive.
pub fn pid_alive_in_group(pid: libc::pid_t, pgid: libc::pid_t) -> bool {
    // SAFETY: plain syscall.
    pid > 1 && unsafe { libc::getpgid(pid) } == pgid && !is_zombie(pid)
}

/// What `/proc/<pid>/stat` says, as far as liveness goes.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, PartialEq)]
enum Stat {
    /// The process no longer exists (ENOENT, ESRCH).
    Gone,
    /// It could not be read or understood for another reason: nothing is known.
    Unknown,
    /// Read: whether it is a zombie (Z, or X while being reaped), and its process group.
    Read { zombie: bool, pgrp: libc::pid_t },
}

/// Classifies the result of reading a stat file (separate from the read, to test the errors).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn classify_stat(read: &std::io::Result<String>) -> Stat {
    let stat = match read {
        Ok(s) => s,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Stat::Gone,
        Err(_) => return Stat::Unknown,
    };
    // Fields after the command (which may hold spaces and parentheses): state, ppid, pgrp, …
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return Stat::Unknown;
    };
    let mut f = rest.split_whitespace();
    match (f.next(), f.nth(1).and_then(|p| p.parse().ok())) {
        (Some(state), Some(pgrp)) => Stat::Read {
            zombie: state == "Z" || state == "X",
            pgrp,
        },
        _ => Stat::Unknown,
    }
}

#[cfg(target_os = "linux")]
fn read_stat(pid: libc::pid_t) -> Stat {
    classify_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")))
}

/// A zombie has exited; kill(pid, 0) still succeeds on it until its parent (or init) reaps it,
/// and some container inits never do. Only a zombie state or a vanished entry say so.
#[cfg(target_os = "linux")]
fn is_zombie(pid: libc::pid_t) -> bool {
    match read_stat(pid) {
        Stat::Gone => true,
        Stat::Unknown => false,
        Stat::Read { zombie, .. } => zombie,
    }
}

#[cfg(not(target_os = "linux"))]
fn is_zombie(_pid: libc::pid_t) -> bool {
    false
}

/// "exit status 137 (killed by signal 9)" and the like, for the launcher's status as passed on
/// by the supervisor (`sh` reports a child killed by signal N as 128+N).
pub fn describe_status(status: Option<ExitStatus>) -> String {
    match status {
        None => "exit status not known yet".to_string(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) if c > 128 && c < 128 + 65 => format!("exit status {c} (killed by signal {})", c - 128),
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None) => "unknown exit status".to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_well() {
        assert_eq!(describe_status(None), "exit status not known yet");
        assert_eq!(describe_status(Some(ExitStatus::from_raw(1 << 8))), "exit status 1");
        assert_eq!(
            describe_status(Some(ExitStatus::from_raw(137 << 8))),
            "exit status 137 (killed by signal 9)"
        );
        assert_eq!(describe_status(Some(ExitStatus::from_raw(15))), "killed by signal 15");
    }

    #[test]
    fn only_a_vanished_entry_or_a_zombie_state_means_dead() {
        let err = |errno| Err(std::io::Error::from_raw_os_error(errno));
        assert_eq!(classify_stat(&err(libc::ENOENT)), Stat::Gone);
        assert_eq!(classify_stat(&err(libc::ESRCH)), Stat::Gone);
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EACCES,
            libc::ENOMEM,
            libc::EIO,
            libc::EINTR,
        ] {
            assert_eq!(classify_stat(&err(errno)), Stat::Unknown, "errno {errno}");
        }
        let read = |s: &str| Ok(s.to_string());
        assert_eq!(
            classify_stat(&read("42 (node) S 1 4242 4242 0 -1")),
            Stat::Read {
                zombie: false,
                pgrp: 4242
            }
        );
        // A command with spaces and parentheses in it.
        assert_eq!(
            classify_stat(&read("42 (a) Z (b) Z 1 77 77 0")),
            Stat::Read { zombie: true, pgrp: 77 }
        );
        assert_eq!(
            classify_stat(&read("42 (x) X 1 77 77")),
            Stat::Read { zombie: true, pgrp: 77 }
        );
        assert_eq!(classify_stat(&read("")), Stat::Unknown);
        assert_eq!(classify_stat(&read("42 (node) S")), Stat::Unknown);
    }

    #[test]
    fn our_own_process_reads_alive() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: plain syscall.
        let pgrp = unsafe { libc::getpgrp() };
        assert!(pid_alive_in_group(me, pgrp));
        assert!(group_has_live_members(pgrp));
        assert!(!group_has_live_members(0));
    }

    #[test]
    fn liveness_of_foreign_pids_is_false() {
        // Our own pid is alive but in another group than a made-up one.
        let me = std::process::id() as libc::pid_t;
        assert!(!pid_alive_in_group(me, 999_999));
        assert!(!pid_alive_in_group(1, 1));
        assert!(!pid_alive_in_group(0, 0));
    }
}
