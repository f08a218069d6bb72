//! One supervised bridge process tree: our child (the supervisor, leader of its own group), the
//! `sh` launcher, node. Owns the two helper threads (stderr drain, reaper) and the stop sequence.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{mpsc, Arc};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use once_cell::sync::OnceCell;
use parking_lot::{Condvar, Mutex};

use super::lifeline::{self, Lifeline};
use super::stderr::{self, LineSink, Startup, StderrShared};
use super::supervisor;
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
    /// The supervisor's pid, which is also the process group id of the whole tree.
    pgid: libc::pid_t,
    launcher: PathBuf,
    state: Arc<(Mutex<State>, Condvar)>,
    pub stderr: Arc<StderrShared>,
    lifeline: Mutex<Option<Lifeline>>,
    node_pid: OnceCell<libc::pid_t>,
    token_dir: OnceCell<PathBuf>,
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
        let (ours, theirs) = lifeline::pair().map_err(|e| start_err("cannot create the lifeline socket", e))?;
        let mut child = supervisor::spawn(program, args, env, theirs)?;
        let pgid = child.id() as libc::pid_t;
        let pipe = child.stderr.take().expect("stderr is piped");

        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = StderrShared::new(sink);
        let (tx, rx) = mpsc::channel();

        let reaper = {
            let state = state.clone();
            std::thread::Builder::new()
                .name("cursor-sdk-bridge-reaper".into())
                .spawn(move || {
                    let status = child.wait().ok();
                    let (m, cv) = &*state;
                    // A failed wait means the child is gone anyway: record a neutral status.
                    m.lock().exit = Some(status.unwrap_or_else(|| ExitStatus::from_raw(0)));
                    cv.notify_all();
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
            std::thread::Builder::new()
                .name("cursor-sdk-bridge-stderr".into())
                .spawn(move || {
                    stderr::drain(pipe, shared, tx, move || {
                        let (m, cv) = &*state;
                        m.lock().stderr_eof = true;
                        cv.notify_all();
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

    /// Records node's pid and the token directory, and tells the supervisor so that it can
    /// clean up even if we are SIGKILLed.
    pub fn announce(&self, node_pid: u32, token_dir: Option<PathBuf>) {
        let pid = node_pid as libc::pid_t;
        let _ = self.node_pid.set(pid);
        let guard = self.lifeline.lock();
        if let Some(l) = guard.as_ref() {
            l.send_line(&format!("pid={pid}"));
        }
        if let Some(dir) = token_dir {
            if let (Some(l), Some(s)) = (guard.as_ref(), dir.to_str()) {
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

    pub fn is_alive(&self) -> bool {
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
    pub fn terminate(&self, graceful: Option<&dyn Fn() -> bool>) {
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
            let _ = std::fs::remove_dir_all(dir);
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
        let mut threads = self.threads.lock();
        let (done, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut *threads)
            .into_iter()
            .partition(|h| h.is_finished() && h.thread().id() != me);
        for h in done {
            let _ = h.join();
        }
        // Unfinished ones (a stray process still holding stderr) end on their own at EOF.
        *threads = pending;
    }

    /// Both helper threads have ended (for tests: no thread outlives a stop).
    pub fn threads_finished(&self) -> bool {
        self.threads.lock().iter().all(|h| h.is_finished())
    }
}

fn kill_group(pgid: libc::pid_t, sig: libc::c_int) {
    if pgid > 1 {
        // SAFETY: plain killpg(2) on the group we created.
        unsafe { libc::killpg(pgid, sig) };
    }
}

/// Does any non-zombie process remain in group `pgid`?
#[cfg(target_os = "linux")]
pub fn group_has_live_members(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if pgid <= 1 || unsafe { libc::killpg(pgid, 0) } != 0 {
        return false;
    }
    // killpg also counts zombies: look at the members themselves.
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<libc::pid_t>().ok()))
        .any(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            // Fields after the command: state, ppid, pgrp, …
            let mut f = rest.split_whitespace();
            let state = f.next();
            let pgrp = f.nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
            pgrp == Some(pgid) && !matches!(state, Some("Z") | Some("X"))
        })
}

#[cfg(not(target_os = "linux"))]
pub fn group_has_live_members(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pgid > 1 && unsafe { libc::killpg(pgid, 0) } == 0
}

/// Is `pid` a live (non-zombie) process of group `pgid`? The group check guards against a
/// recycled pid or a ready line naming a process that is not ours.
pub fn pid_alive_in_group(pid: libc::pid_t, pgid: libc::pid_t) -> bool {
    if pid <= 1 {
        return false;
    }
    // SAFETY: plain syscalls.
    if unsafe { libc::getpgid(pid) } != pgid {
        return false;
    }
    !is_zombie(pid)
}

/// A zombie has exited; kill(pid, 0) still succeeds on it until its parent (or init) reaps it,
/// and some container inits never do.
#[cfg(target_os = "linux")]
fn is_zombie(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X"),
        Err(_) => true,
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

/// The directory of the token file, if it is the bridge's own temp directory
/// (`…/cursor-sdk-bridge-XXXXXX/auth-token`) and therefore ours to delete.
pub fn token_dir_of(auth_token_file: &Path) -> Option<PathBuf> {
    let dir = auth_token_file.parent()?;
    let name = dir.file_name()?.to_str()?;
    let ok = auth_token_file.is_absolute()
        && name.starts_with("cursor-sdk-bridge-")
        && name.len() > "cursor-sdk-bridge-".len()
        && !dir.to_str()?.contains('\n');
    ok.then(|| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_dir_only_when_it_is_the_bridges() {
        assert_eq!(
            token_dir_of(Path::new("/tmp/cursor-sdk-bridge-wbKZRp/auth-token")),
            Some(PathBuf::from("/tmp/cursor-sdk-bridge-wbKZRp"))
        );
        assert_eq!(token_dir_of(Path::new("/tmp/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("/home/me/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("/tmp/cursor-sdk-bridge-/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("cursor-sdk-bridge-x/auth-token")), None);
        assert_eq!(token_dir_of(Path::new("")), None);
    }

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
    fn liveness_of_foreign_pids_is_false() {
        // Our own pid is alive but in another group than a made-up one.
        let me = std::process::id() as libc::pid_t;
        assert!(!pid_alive_in_group(me, 999_999));
        assert!(!pid_alive_in_group(1, 1));
        assert!(!pid_alive_in_group(0, 0));
    }
}
