//! The lifeline: a socket whose far end is the supervisor's stdin and whose near end only this
//! process holds. When we close it, or the kernel closes it because we died (even by SIGKILL),
//! the supervisor reads EOF and takes the bridge down.
//!
//! A socketpair rather than a pipe: `send(MSG_NOSIGNAL)` cannot raise SIGPIPE in a host that did
//! not ignore it (we are a C library), and `shutdown()` forces EOF even if some fork of the host
//! still holds a copy of the descriptor. For the same reason only the launching process may cut
//! it (`process.rs` checks): a forked child that merely exits closes its copy, which the
//! supervisor does not notice while the parent holds the original.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Lifeline {
    ours: OwnedFd,
}

/// Creates the pair: (our end, the supervisor's end). Both are close-on-exec, so no other child
/// of the host inherits them; the spawn dup2()s the supervisor's end onto its stdin.
pub fn pair() -> io::Result<(Lifeline, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let ty = libc::SOCK_STREAM;
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair just returned these two fresh descriptors.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        // No SOCK_CLOEXEC here (macOS): set it right away (a fork in between is a narrow race).
        for fd in [&ours, &theirs] {
            // SAFETY: valid descriptor.
            unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        #[cfg(any(target_os = "macos", target_os = "ios"))]
        {
            let one: libc::c_int = 1;
            // SAFETY: valid descriptor and option value.
            unsafe {
                libc::setsockopt(
                    ours.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_NOSIGPIPE,
                    &one as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        }
    }
    Ok((Lifeline { ours }, theirs))
}

impl Lifeline {
    /// Tells the supervisor something (one `key=value` line). Best effort: if the supervisor is
    /// gone there is nobody to tell.
    pub fn send_line(&self, line: &str) {
        if line.contains('\n') {
            return;
        }
        let msg = format!("{line}\n");
        let mut buf = msg.as_bytes();
        #[cfg(any(target_os = "macos", target_os = "ios"))]
        let flags = 0;
        #[cfg(not(any(target_os = "macos", target_os = "ios")))]
        let flags = libc::MSG_NOSIGNAL;
        while !buf.is_empty() {
            // SAFETY: valid descriptor and buffer.
            let n = unsafe {
                libc::send(
                    self.ours.as_raw_fd(),
                    buf.as_ptr() as *const libc::c_void,
                    buf.len(),
                    flags,
                )
            };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            buf = &buf[n as usize..];
        }
    }

    /// Closes our end: the supervisor sees EOF and tears the bridge down.
    pub fn cut(self) {
        // SAFETY: valid descriptor; shutdown makes EOF certain even if a stray copy exists.
        unsafe { libc::shutdown(self.ours.as_raw_fd(), libc::SHUT_RDWR) };
        drop(self.ours);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn lines_then_eof() {
        let (ours, theirs) = pair().unwrap();
        let mut theirs = std::fs::File::from(theirs);
        ours.send_line("pid=42");
        ours.send_line("bad\nline");
        ours.cut();
        let mut s = String::new();
        theirs.read_to_string(&mut s).unwrap();
        assert_eq!(s, "pid=42\n");
    }

    #[test]
    fn sending_to_a_closed_peer_does_not_raise_sigpipe() {
        let (ours, theirs) = pair().unwrap();
        drop(theirs);
        ours.send_line("dir=/tmp/x");
        ours.send_line("dir=/tmp/x");
    }
}
