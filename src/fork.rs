//! fork(2) awareness. A forked child inherits the parent's sockets, pipes and bridge, but none
//! of its threads: anything the library made belongs to the process that made it. In any other
//! process the library must neither touch those resources (a socket shutdown, a signal or an
//! at-exit stop would break the parent) nor wait on threads that do not exist there.

/// The process an object was made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner(u32);

impl Owner {
    /// The calling process.
    pub fn here() -> Owner {
        Owner(std::process::id())
    }

    /// True in a forked child of the owner (or any other process).
    pub fn is_foreign(self) -> bool {
        std::process::id() != self.0
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_is_foreign_and_the_parent_is_not() {
        let owner = Owner::here();
        assert!(!owner.is_foreign());
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
