//! The descriptors a launched bridge inherits. A host's descriptors without close-on-exec (a
//! pipe a runtime made, a socket, a log file) would otherwise live on in the supervisor, the
//! launcher and node for as long as the bridge runs: a reader of such a pipe never sees EOF, a
//! listening socket stays bound. The child keeps only its stdin, stdout and stderr.

/// For `pre_exec`: marks every descriptor from 3 up close-on-exec (async-signal-safe: one
/// `close_range` on Linux ≥ 5.11, else `fcntl` per descriptor). Marking rather than closing
/// keeps the spawn's own error pipe working (it is close-on-exec already).
pub fn cloexec_inherited() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: a plain syscall on descriptor numbers; no memory is involved.
        if unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) } == 0 {
            return;
        }
    }
    // SAFETY: getrlimit and fcntl on descriptor numbers only.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 16) as libc::c_int
        } else {
            1024
        };
        for fd in 3..max {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}
