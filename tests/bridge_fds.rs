//! A launched bridge inherits none of the host's descriptors beyond stdin, stdout and stderr,
//! even those the host left without close-on-exec (its own test binary: the inheritable pipe
//! made here must not leak into other tests' children).

mod common;

use std::time::Duration;

use common::Sandbox;

#[test]
fn a_pipe_without_cloexec_is_not_held_by_the_bridge() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a plain pipe (deliberately without O_CLOEXEC, as a careless host makes one).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read_end, write_end) = (fds[0], fds[1]);
    let sb = Sandbox::new();
    let client = sb.client();
    client.ping().unwrap();
    let pid = client.bridge_pid().unwrap();
    let held = |pid: u32| -> bool {
        let target = std::fs::read_link(format!("/proc/self/fd/{write_end}")).unwrap();
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .any(|e| std::fs::read_link(e.path()).ok() == Some(target.clone()))
            })
            .unwrap_or(false)
    };
    assert!(!held(pid), "node holds the host's pipe");
    // Nobody but us holds the write end: closing ours gives the reader EOF at once.
    unsafe {
        libc::close(write_end);
        libc::fcntl(read_end, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let mut byte = 0u8;
    // SAFETY: reading one byte into a local.
    let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
    assert_eq!(n, 0, "the pipe's write end lives on in a process the library started");
    unsafe { libc::close(read_end) };
    client.shutdown();
    assert!(common::eventually(Duration::from_secs(5), || !common::alive(pid)));
}
