//! fork(2) awareness. A forked child inherits the parent's sockets, pipes and bridge, but none
//! of its threads: anything the library made belongs to the process that made it. In any other
//! process the library must neither touch those resources (a socket shutdown, a signal or an
//! at-exit stop would break the parent) nor wait on threads that do not exist there.

use std::sync::atomic::{AtomicU32, Ordering};

/// The process an object was made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner(u32);

impl Owner {
    /// The calling process.
    pub fn here() -> Owner {
        Owner(pid())
    }

    /// True in a forked child of the owner (or any other process).
    pub fn is_foreign(self) -> bool {
        pid() != self.0
    }

    /// `CURSOR_E_USAGE` for a call made in a forked child.
    pub fn check(self, what: &str) -> crate::Result<()> {
        if self.is_foreign() {
            return Err(crate::Error::usage(format!(
                "this {what} was created in process {} and cannot be used after fork(); \
                 create a new client in this process",
                self.0
            )));
        }
        Ok(())
    }
}

/// This process's id, kept because the check runs on every call (twice per streamed event) and
/// `getpid` is a system call (~0.23 µs of CPU on the benchmark VM, more than the rest of an
/// event's handling). A fork handler stores the child's own id in the child. 0: not known yet.
static PID: AtomicU32 = AtomicU32::new(0);

fn pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => remember_pid(),
        p => p,
    }
}

/// Registers the fork handler once, then keeps the id. Only a child made without fork handlers
/// (a raw `clone`, glibc's `_Fork`) would still see the parent's id; if the handler cannot be
/// registered, every call asks the system.
#[cfg(unix)]
fn remember_pid() -> u32 {
    extern "C" fn in_child() {
        PID.store(std::process::id(), Ordering::Relaxed);
    }
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a child handler that only makes a system call and an atomic store.
        if unsafe { libc::pthread_atfork(None, None, Some(in_child)) } == 0 {
            PID.store(std::process::id(), Ordering::Relaxed);
        }
    });
    std::process::id()
}

#[cfg(not(unix))]
fn remember_pid() -> u32 {
    let id = std::process::id();
    PID.store(id, Ordering::Relaxed);
    id
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_is_foreign_and_the_parent_is_not() {
        let owner = Owner::here();
        assert!(!owner.is_foreign());
        // The id is kept (no system call per check), so the child below sees its own only
        // through the fork handler.
        assert_eq!(PID.load(Ordering::Relaxed), std::process::id());
        assert!(owner.check("client").is_ok());
        // SAFETY: the child only calls async-signal-safe functions (getpid, _exit).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = if owner.is_foreign() { 0 } else { 1 };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status}"
        );
    }
}
