//! Signal hygiene for what the library starts.
//!
//! A host may block or ignore signals on the thread that first calls us (Swift concurrency and
//! GCD threads block most of them). Without care that state leaks twice: into our threads (a
//! thread with signals unblocked could take a signal the host meant for its own threads) and,
//! through fork + exec, into the bridge (dash's `wait` never returns while SIGCHLD is blocked, so
//! the supervisor would hang for seconds at every stop).

use std::io;

/// Highest signal number + 1 (`NSIG`): real-time signals included on Linux.
#[cfg(any(target_os = "linux", target_os = "android"))]
const NSIG: libc::c_int = 65;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const NSIG: libc::c_int = 32;

/// Runs `spawn` (which starts a thread) with every signal blocked in the calling thread, so the
/// new thread starts with all signals blocked; the caller's own mask is restored right after.
pub fn with_all_blocked<T>(spawn: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data, initialised by sigfillset; pthread_sigmask only changes
    // the calling thread's mask, and `old` receives the previous one.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let blocked = libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0;
        let out = spawn();
        if blocked {
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        out
    }
}

/// For `pre_exec`: the new program starts with an empty signal mask and the default disposition
/// for every catchable signal (only ignored signals survive exec; handlers are reset by it, but
/// resetting all is simpler and costs nothing). Async-signal-safe: sigemptyset, sigaction,
/// sigprocmask only.
pub fn reset_for_exec() -> io::Result<()> {
    // SAFETY: runs in the forked child before exec; only async-signal-safe calls on local data.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        for sig in 1..NSIG {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP && libc::sigaction(sig, &dfl, std::ptr::null_mut()) != 0 {
                reset_reserved(sig);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// glibc refuses to touch the signals it reserves for itself (32 and 33), yet a host can have
/// them ignored, and ignored signals survive exec: ask the kernel directly. An all-zero kernel
/// `sigaction` is SIG_DFL with no flags and an empty mask on every Linux architecture.
#[cfg(any(target_os = "linux", target_os = "android"))]
unsafe fn reset_reserved(sig: libc::c_int) {
    let dfl = [0u64; 8];
    let sigset_size: libc::size_t = 8;
    libc::syscall(
        libc::SYS_rt_sigaction,
        sig,
        dfl.as_ptr(),
        std::ptr::null::<u64>(),
        sigset_size,
    );
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
unsafe fn reset_reserved(_sig: libc::c_int) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_mask() -> libc::sigset_t {
        // SAFETY: queries the calling thread's mask into local data.
        unsafe {
            let mut m: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut m);
            m
        }
    }

    fn is_member(m: &libc::sigset_t, sig: libc::c_int) -> bool {
        // SAFETY: reads a valid set.
        unsafe { libc::sigismember(m, sig) == 1 }
    }

    #[test]
    fn threads_start_blocked_and_the_caller_keeps_its_mask() {
        std::thread::spawn(|| {
            // SAFETY: changes only this test thread's mask.
            unsafe {
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, libc::SIGUSR2);
                libc::pthread_sigmask(libc::SIG_SETMASK, &one, std::ptr::null_mut());
            }
            let inner = with_all_blocked(|| std::thread::spawn(current_mask)).join().unwrap();
            for sig in [
                libc::SIGINT,
                libc::SIGTERM,
                libc::SIGCHLD,
                libc::SIGHUP,
                libc::SIGPIPE,
                libc::SIGUSR1,
            ] {
                assert!(is_member(&inner, sig), "signal {sig} not blocked in the new thread");
            }
            let mine = current_mask();
            assert!(is_member(&mine, libc::SIGUSR2));
            assert!(!is_member(&mine, libc::SIGINT), "the caller's mask was not restored");
        })
        .join()
        .unwrap();
    }
}
