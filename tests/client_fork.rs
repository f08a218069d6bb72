//! fork(2) at the client level: in a forked child every call on the parent's client fails at once
//! with `Usage`, dropping it there touches nothing of the parent's, and the child's exit (at-exit
//! hooks included) leaves the parent's bridge serving.

mod common;

use std::time::{Duration, Instant};

use common::Sandbox;
use cursor_sdk::ErrorKind;

/// Runs `child` in a forked child and returns its exit code (`child`'s return value, 99 on a
/// panic). The child leaves through `exit`, so at-exit hooks run as in a real program.
fn in_child(child: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child runs only the closure and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
        unsafe { libc::exit(code) };
    }
    let mut status = 0;
    let t0 = Instant::now();
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the child hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(libc::WIFEXITED(status), "the child died: status {status:#x}");
    libc::WEXITSTATUS(status)
}

#[test]
fn a_forked_child_gets_usage_at_once_and_leaves_the_parents_bridge_alone() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let agent = client
        .create_agent(cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap())
        .unwrap();
    let run = agent.send_text("scenario:slow:50").unwrap();
    let pid = client.bridge_pid().unwrap();

    let code = in_child(|| {
        let t0 = Instant::now();
        let checks = [
            client.ping().err().map(|e| e.kind),
            agent.send_text("x").err().map(|e| e.kind),
            run.next_event(None).err().map(|e| e.kind),
            run.check_process().err().map(|e| e.kind),
        ];
        run.cancel(); // a no-op here, never a hang
        if t0.elapsed() > Duration::from_millis(500) {
            return 2;
        }
        if checks.iter().any(|k| *k != Some(ErrorKind::Usage)) {
            return 3;
        }
        // Dropping the child's copies must not stop the parent's bridge or its stream (after
        // fork the child's memory is its own, as for a C program freeing its handles).
        // SAFETY: each value is read once here and the originals are never used in the child.
        unsafe {
            drop(std::ptr::read(&run));
            drop(std::ptr::read(&agent));
            drop(std::ptr::read(&client));
        }
        0
    });
    assert_eq!(code, 0, "child checks failed (2: slow, 3: not Usage)");

    assert!(common::alive(pid), "the child's exit killed the parent's bridge");
    client.ping().unwrap();
    assert_eq!(client.bridge_pid(), Some(pid), "the bridge was replaced");
    // The parent's run still streams, and cancels.
    assert!(matches!(
        run.next_event(Some(Duration::from_secs(5))),
        Ok(cursor_sdk::Next::Event(_))
    ));
    run.cancel();
    assert_eq!(run.wait().unwrap().status, cursor_sdk::RunStatus::Cancelled);
}
