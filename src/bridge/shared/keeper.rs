//! The keeper: the one process that owns a shared bridge, started by whichever client launches
//! it and belonging to none of them (double fork, own session, no lifeline, no parent-death
//! signal), so that it outlives them by design.
//!
//! It is a forked copy of the launching host that never execs: between fork and `_exit` it makes
//! only async-signal-safe system calls on memory prepared before the fork (the host may have
//! other threads, whose locks the copy inherits frozen). It closes every descriptor it inherited
//! (a host's lifeline socket or lease held open by the keeper would defeat their purpose, and a
//! pipe on the host's stdout would not see EOF before the keeper exits), forks
//! the bridge into its own process group with its stderr on a log file, then polls every
//! [`POLL_MS`]:
//! - the bridge exited: clean up and exit;
//! - SIGTERM or SIGINT pending (blocked, read with `sigpending`): stop the bridge, clean up;
//! - the lease file: clients hold a shared `flock` on it for as long as they use the bridge,
//!   released by the kernel when their process dies, even by SIGKILL. When an exclusive try-lock
//!   succeeds nobody holds one; after `idle` of that, under the key's lock (which every client
//!   holds while it attaches), and if still nobody holds one, the keeper removes the
//!   registration (only if it still names this instance), stops the bridge (SIGTERM to its
//!   group, 3 s, SIGKILL) and removes what this instance left: lease, log, token directory.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use libc::c_char;

/// How often the keeper looks at the bridge, its signals and the lease.
const POLL_MS: u64 = 100;
/// How long the bridge gets between SIGTERM and SIGKILL.
const TERM_GRACE_MS: u64 = 3000;

/// Everything the keeper needs, prepared before the fork.
pub struct Spec {
    pub program: CString,
    /// `argv[0]` included.
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    /// The bridge's stderr (a 0600 file in the runtime directory).
    pub log: OwnedFd,
    pub lock_path: CString,
    pub lease_path: CString,
    pub registration_path: CString,
    /// A file naming the bridge's verified token directory, written by the launcher after ready.
    pub token_dir_note: CString,
    pub log_path: CString,
    /// Bytes that only this instance's registration contains (its nonce).
    pub needle: Vec<u8>,
    pub idle: Duration,
}

pub struct Started {
    pub keeper: libc::pid_t,
    /// The bridge's first process, leader of its process group.
    pub group: libc::pid_t,
    /// Read end of a pipe the keeper holds open for its whole life: EOF means it is gone.
    pub status: OwnedFd,
}

/// Starts the keeper (which starts the bridge) and returns once both pids are known.
pub fn spawn(spec: &Spec) -> io::Result<Started> {
    let argv: Vec<*const c_char> = spec
        .argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const c_char> = spec
        .envp
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let (read_end, write_end) = pipe()?;
    // SAFETY: the child runs only async-signal-safe code (see the module doc) and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the intermediate child: setsid, fork and _exit only, then the keeper.
        unsafe {
            libc::setsid();
            let keeper = libc::fork();
            if keeper != 0 {
                libc::_exit(if keeper < 0 { 1 } else { 0 });
            }
            // Leader of its own group (not of a session: it can never get a terminal), which
            // is how clients tell it from a process that took over its pid.
            libc::setpgid(0, 0);
            keeper_main(spec, &argv, &envp, write_end.as_raw_fd());
        }
    }
    drop(write_end);
    let mut status = 0;
    // SAFETY: reaping the intermediate child we just forked.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && errno() == libc::EINTR {}
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the rest of a local buffer.
        let n = unsafe { libc::read(read_end.as_raw_fd(), buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            n if n > 0 => got += n as usize,
            0 => return Err(io::Error::other("the keeper exited before it started the bridge")),
            _ if errno() == libc::EINTR => {}
            _ => return Err(io::Error::last_os_error()),
        }
    }
    let keeper = i32::from_ne_bytes(buf[..4].try_into().unwrap_or_default());
    let group = i32::from_ne_bytes(buf[4..].try_into().unwrap_or_default());
    if keeper <= 1 || group <= 1 {
        return Err(io::Error::other("the keeper could not start the bridge"));
    }
    Ok(Started {
        keeper,
        group,
        status: read_end,
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for fd in fds {
        // SAFETY: valid descriptors just made (a fork in between is covered by the keeper's
        // closing every descriptor it does not need).
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: pipe just returned these two fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The keeper process. Async-signal-safe calls only; never returns.
unsafe fn keeper_main(spec: &Spec, argv: &[*const c_char], envp: &[*const c_char], status: RawFd) -> ! {
    let _ = super::super::signals::reset_for_exec();
    // In `ps`, not the name of whatever host thread forked it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::prctl(libc::PR_SET_NAME, c"cursor-sdk-keep".as_ptr(), 0, 0, 0);
    libc::signal(libc::SIGHUP, libc::SIG_IGN);
    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    let mut stop_signals: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut stop_signals);
    libc::sigaddset(&mut stop_signals, libc::SIGTERM);
    libc::sigaddset(&mut stop_signals, libc::SIGINT);
    libc::sigprocmask(libc::SIG_BLOCK, &stop_signals, std::ptr::null_mut());

    let flags = libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    // Our own open file descriptions: the host's lock and lease are the host's.
    let lock = libc::open(spec.lock_path.as_ptr(), flags);
    let lease = libc::open(spec.lease_path.as_ptr(), flags);
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
    if lock < 0 || lease < 0 || null < 0 {
        libc::_exit(1);
    }
    // Above 0–2, which are about to become /dev/null (a host may have closed its stdin).
    let [status, log, lock, lease, null] = [status, spec.log.as_raw_fd(), lock, lease, null].map(|fd| above_stdio(fd));
    close_all_except(&[status, log, lock, lease, null]);
    // Nor the host's stdin/stdout/stderr: a shell reading the host's output through a pipe
    // would wait for the keeper too.
    for fd in 0..3 {
        libc::dup2(null, fd);
    }
    libc::fcntl(status, libc::F_SETFD, libc::FD_CLOEXEC);

    let me = libc::getpid();
    let group = libc::fork();
    if group == 0 {
        start_bridge(spec, argv, envp, me, null, log);
    }
    if group > 0 {
        // Also from this side: the group exists before anyone signals it.
        libc::setpgid(group, group);
    }
    let mut pids = [0u8; 8];
    pids[..4].copy_from_slice(&me.to_ne_bytes());
    pids[4..].copy_from_slice(&group.max(0).to_ne_bytes());
    libc::write(status, pids.as_ptr().cast(), pids.len());
    libc::close(log);
    libc::close(null);
    if group < 0 {
        finish(spec, lock, None);
    }

    let idle_ms = spec.idle.as_millis().min(u64::MAX as u128) as u64;
    let mut idle_since: Option<u64> = None;
    loop {
        sleep_ms(POLL_MS);
        if exited(group) {
            finish(spec, lock, Some(group));
        }
        if stop_requested() {
            finish(spec, lock, Some(group));
        }
        if !lease_free(lease) {
            idle_since = None;
            continue;
        }
        let now = now_ms();
        let since = *idle_since.get_or_insert(now);
        if now.saturating_sub(since) < idle_ms {
            continue;
        }
        // Clients attach under the key's lock: holding it, a free lease stays free.
        flock_blocking(lock, libc::LOCK_EX);
        if lease_free(lease) {
            finish(spec, lock, Some(group));
        }
        libc::flock(lock, libc::LOCK_UN);
        idle_since = None;
    }
}

/// The bridge's process: own group, dies with the keeper (Linux), stdin/stdout on /dev/null,
/// stderr on the log, default signals; then exec.
unsafe fn start_bridge(
    spec: &Spec,
    argv: &[*const c_char],
    envp: &[*const c_char],
    keeper: libc::pid_t,
    null: RawFd,
    log: RawFd,
) -> ! {
    libc::setpgid(0, 0);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != keeper {
            libc::_exit(126);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = keeper;
    libc::dup2(null, 0);
    libc::dup2(null, 1);
    libc::dup2(log, 2);
    let _ = super::super::signals::reset_for_exec();
    libc::execve(spec.program.as_ptr(), argv.as_ptr(), envp.as_ptr());
    libc::_exit(127);
}

/// `fd`, or a close-on-exec copy of it numbered 3 or more.
unsafe fn above_stdio(fd: RawFd) -> RawFd {
    if fd > 2 {
        return fd;
    }
    libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3)
}

/// Removes this instance's traces and exits. `group`: the bridge to stop (and reap).
unsafe fn finish(spec: &Spec, lock: RawFd, group: Option<libc::pid_t>) -> ! {
    flock_blocking(lock, libc::LOCK_EX);
    remove_registration_if_ours(spec);
    libc::unlink(spec.lease_path.as_ptr());
    libc::flock(lock, libc::LOCK_UN);
    if let Some(group) = group {
        stop_bridge(group);
    }
    remove_token_dir(spec);
    libc::unlink(spec.log_path.as_ptr());
    libc::_exit(0);
}

/// SIGTERM to the group, up to [`TERM_GRACE_MS`] for the leader to exit, SIGKILL to whatever is
/// left, then reap. The leader is reaped last: until then its group id cannot be reused.
unsafe fn stop_bridge(group: libc::pid_t) {
    if !exited(group) {
        libc::killpg(group, libc::SIGTERM);
        let mut waited = 0;
        while waited < TERM_GRACE_MS && !exited(group) {
            sleep_ms(10);
            waited += 10;
        }
    }
    libc::killpg(group, libc::SIGKILL);
    let mut st = 0;
    while libc::waitpid(group, &mut st, 0) < 0 && errno() == libc::EINTR {}
}

/// Has the leader exited? Leaves it unreaped (a zombie keeps its group id reserved).
unsafe fn exited(pid: libc::pid_t) -> bool {
    let mut info: libc::siginfo_t = std::mem::zeroed();
    let r = libc::waitid(
        libc::P_PID,
        pid as libc::id_t,
        &mut info,
        libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
    );
    r == 0 && siginfo_pid(&info) == pid
}

#[cfg(any(target_os = "linux", target_os = "android"))]
unsafe fn siginfo_pid(info: &libc::siginfo_t) -> libc::pid_t {
    info.si_pid()
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
unsafe fn siginfo_pid(info: &libc::siginfo_t) -> libc::pid_t {
    info.si_pid
}

unsafe fn stop_requested() -> bool {
    let mut pending: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut pending);
    libc::sigpending(&mut pending) == 0
        && (libc::sigismember(&pending, libc::SIGTERM) == 1 || libc::sigismember(&pending, libc::SIGINT) == 1)
}

/// Nobody holds a shared lock on the lease (the probe's own lock is dropped at once). Any
/// error but "would block" also answers false: when unsure, a client may be there.
unsafe fn lease_free(lease: RawFd) -> bool {
    if libc::flock(lease, libc::LOCK_EX | libc::LOCK_NB) == 0 {
        libc::flock(lease, libc::LOCK_UN);
        return true;
    }
    false
}

unsafe fn flock_blocking(fd: RawFd, op: libc::c_int) {
    while libc::flock(fd, op) != 0 && errno() == libc::EINTR {}
}

unsafe fn remove_registration_if_ours(spec: &Spec) {
    let mut buf = [0u8; 8192];
    let n = read_small(spec.registration_path.as_ptr(), &mut buf);
    if n > 0 && contains(&buf[..n], &spec.needle) {
        libc::unlink(spec.registration_path.as_ptr());
    }
}

/// Unlinks `auth-token` in the directory the note names, then the directory if it is empty
/// (never recursively), if it is a real directory of ours.
unsafe fn remove_token_dir(spec: &Spec) {
    const FILE: &[u8] = b"/auth-token\0";
    let mut path = [0u8; 4096];
    let n = read_small(spec.token_dir_note.as_ptr(), &mut path[..4096 - FILE.len()]);
    libc::unlink(spec.token_dir_note.as_ptr());
    if n == 0 || path[..n].contains(&0) {
        return;
    }
    path[n] = 0;
    let mut st: libc::stat = std::mem::zeroed();
    if libc::lstat(path.as_ptr().cast(), &mut st) != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFDIR
        || st.st_uid != libc::getuid()
    {
        return;
    }
    let mut file = path;
    file[n..n + FILE.len()].copy_from_slice(FILE);
    libc::unlink(file.as_ptr().cast());
    libc::rmdir(path.as_ptr().cast());
}

/// Reads a small regular file (not through a symlink) into `buf`; the byte count, 0 on error.
unsafe fn read_small(path: *const c_char, buf: &mut [u8]) -> usize {
    let fd = libc::open(path, libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW);
    if fd < 0 {
        return 0;
    }
    let mut got = 0;
    while got < buf.len() {
        let n = libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got);
        if n > 0 {
            got += n as usize;
        } else if n < 0 && errno() == libc::EINTR {
            continue;
        } else {
            break;
        }
    }
    libc::close(fd);
    got
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Closes every descriptor from 3 up except `keep` (one `close_range` per gap on Linux, else a
/// loop bounded by the descriptor limit).
unsafe fn close_all_except(keep: &[RawFd]) {
    let mut sorted = [0 as RawFd; 8];
    let n = keep.len().min(sorted.len());
    sorted[..n].copy_from_slice(&keep[..n]);
    sorted[..n].sort_unstable();
    let mut from: RawFd = 3;
    for &fd in &sorted[..n] {
        if fd >= from {
            close_range(from, fd - 1);
            from = fd + 1;
        }
    }
    close_range(from, RawFd::MAX);
}

unsafe fn close_range(lo: RawFd, hi: RawFd) {
    if lo > hi {
        return;
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if libc::syscall(libc::SYS_close_range, lo as u32, hi as u32, 0u32) == 0 {
        return;
    }
    let mut lim: libc::rlimit = std::mem::zeroed();
    let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
        lim.rlim_cur.min(1 << 16) as RawFd
    } else {
        1024
    };
    let mut fd = lo;
    while fd <= hi && fd < max {
        libc::close(fd);
        fd += 1;
    }
}

fn now_ms() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

fn sleep_ms(ms: u64) {
    let ts = libc::timespec {
        tv_sec: (ms / 1000) as libc::time_t,
        tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: nanosleep reads a local timespec; an early wake-up only shortens one poll.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

#[cfg(test)]
mod tests {
    use super::contains;

    #[test]
    fn needle_search() {
        assert!(contains(br#"{"nonce":"ab12","url":"x"}"#, br#""nonce":"ab12""#));
        assert!(!contains(br#"{"nonce":"ab123"}"#, br#""nonce":"ab12""#));
        assert!(!contains(b"anything", b""));
    }
}
