//! A forked child of the host must leave the parent's bridge alone: its exit (at-exit hook), and
//! dropping or stopping the handle it inherited, do nothing to the bridge and never hang. Against
//! the real bridge.
#![cfg(unix)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cursor_sdk::bridge::{LaunchOptions, ManagedBridge};
use cursor_sdk::ErrorKind;

/// The real bridge (`tests/common`): a missing bridge fails loudly instead of skipping.
use common::real_bridge as bridge_bin;

fn launch(ws: &tempfile::TempDir) -> ManagedBridge {
    ManagedBridge::launch(&LaunchOptions {
        bridge_path: Some(bridge_bin()),
        workspace: Some(ws.path().to_path_buf()),
        ..Default::default()
    })
    .expect("launch")
}

fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("cursor-sdk-test-fork-")
        .tempdir()
        .unwrap()
}

/// The HTTP status of a Ping on a fresh connection (0 if the connection failed).
fn ping(base_url: &str, token: &str) -> u16 {
    let authority = base_url.strip_prefix("http://").unwrap();
    let Ok(mut s) = TcpStream::connect(authority) else {
        return 0;
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let sent = write!(
        s,
        "POST /sdk.v1.SdkBridgeControlService/Ping HTTP/1.1\r\nHost: {authority}\r\n\
         Content-Type: application/json\r\nAuthorization: Bearer {token}\r\nContent-Length: 2\r\n\
         Connection: close\r\n\r\n{{}}"
    );
    let mut reply = String::new();
    if sent.is_err() || s.read_to_string(&mut reply).is_err() {
        return 0;
    }
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Is this pid a live, non-zombie process?
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat[stat.rfind(')').unwrap() + 1..].split_whitespace().next(),
            Some("Z" | "X")
        ),
        Err(_) => false,
    }
}

/// Forks; the child runs `child` and exits through exit(3) (so at-exit hooks run) with its
/// result (99 if it panicked). Returns the child's pid.
fn fork_child(child: impl FnOnce() -> i32) -> libc::pid_t {
    // SAFETY: the child only runs library code under test and then exits.
    match unsafe { libc::fork() } {
        -1 => panic!("fork failed: {}", std::io::Error::last_os_error()),
        0 => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
            // SAFETY: ends the child, running its at-exit hooks.
            unsafe { libc::exit(code) }
        }
        pid => pid,
    }
}

/// The child's exit code; panics (after killing it) if it has not exited within `limit`.
fn wait_child(pid: libc::pid_t, limit: Duration) -> i32 {
    let t0 = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            assert!(libc::WIFEXITED(status), "child ended by signal: status {status:#x}");
            return libc::WEXITSTATUS(status);
        }
        assert_eq!(r, 0, "waitpid: {}", std::io::Error::last_os_error());
        if t0.elapsed() > limit {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child hung for {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The parent's bridge is intact after the child: node alive, Ping answered, token dir there
/// (checked again after a pause, in case the supervisor was told to shut down).
fn assert_intact(b: &ManagedBridge) {
    for _ in 0..2 {
        assert!(b.owned_by_this_process());
        assert!(b.is_alive() && b.exit_error().is_none());
        assert!(alive(b.ready().pid), "node died");
        assert!(b.ready().auth_token_file.is_file(), "token file removed");
        assert_eq!(ping(b.base_url(), b.token()), 200);
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Then a normal stop still cleans everything up.
fn assert_stop_cleans_up(b: ManagedBridge) {
    let (pid, pgid) = (b.ready().pid, b.process_group() as libc::pid_t);
    let dir = b.ready().auth_token_file.parent().unwrap().to_path_buf();
    let t0 = Instant::now();
    b.stop(None);
    assert!(t0.elapsed() < Duration::from_secs(7));
    assert!(!alive(pid) && !dir.exists());
    // SAFETY: signal 0 only checks.
    assert_ne!(unsafe { libc::killpg(pgid, 0) }, 0, "processes left in group {pgid}");
    // The helper threads end at the pipe's EOF, a moment after the stop on a loaded machine.
    let t0 = Instant::now();
    while !b.io_threads_finished() && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(b.io_threads_finished());
}

#[test]
fn a_forked_child_that_exits_leaves_the_parents_bridge_alone() {
    let ws = workspace();
    let b = launch(&ws);
    let child = fork_child(|| 0);
    assert_eq!(wait_child(child, Duration::from_secs(5)), 0);
    assert_intact(&b);
    assert_stop_cleans_up(b);
}

/// What the child does with its inherited handle; returns failure bits (1 owned, 2 alive,
/// 4 no Usage error, 8 graceful called).
fn use_inherited(b: ManagedBridge) -> i32 {
    let called = std::sync::atomic::AtomicBool::new(false);
    let graceful = || {
        called.store(true, std::sync::atomic::Ordering::SeqCst);
        true
    };
    let mut failures = i32::from(b.owned_by_this_process());
    failures |= i32::from(b.is_alive()) << 1;
    failures |= i32::from(b.exit_error().map(|e| e.kind) != Some(ErrorKind::Usage)) << 2;
    b.stop(Some(&graceful));
    b.stop(None);
    drop(b);
    failures | i32::from(called.load(std::sync::atomic::Ordering::SeqCst)) << 3
}

#[test]
fn an_inherited_handle_is_inert_in_the_child() {
    let ws = workspace();
    let b = launch(&ws);
    // SAFETY: the child only runs library code under test and then exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // The child stops and drops its copy of the handle, then exits (at-exit hooks run).
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || use_inherited(b))).unwrap_or(99);
        // SAFETY: ends the child.
        unsafe { libc::exit(code) }
    }
    assert_eq!(
        wait_child(pid, Duration::from_secs(5)),
        0,
        "see use_inherited for the bits"
    );
    assert_intact(&b);
    assert_stop_cleans_up(b);
}

#[test]
fn a_child_forked_during_a_stop_does_not_hang() {
    let ws = workspace();
    let b = launch(&ws);
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        // A stop whose graceful step blocks: the stop lock is held while we fork.
        let bridge = &b;
        let stopper = s.spawn(move || {
            let graceful = || {
                entered_tx.send(()).unwrap();
                let _ = release_rx.recv_timeout(Duration::from_secs(30));
                false
            };
            bridge.stop(Some(&graceful));
        });
        entered_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("stop never reached graceful");
        let child = fork_child(|| {
            b.stop(None);
            i32::from(b.is_alive() || b.exit_error().is_none() || !b.stderr_tail().is_empty())
        });
        let code = wait_child(child, Duration::from_secs(5));
        // The child changed nothing: the stop is still waiting and the bridge answers.
        assert!(b.is_alive());
        assert_eq!(ping(b.base_url(), b.token()), 200);
        release_tx.send(()).unwrap();
        stopper.join().unwrap();
        assert_eq!(code, 0);
    });
    assert!(!b.is_alive());
    assert_stop_cleans_up(b);
}

#[test]
fn a_forked_child_can_launch_and_stop_its_own_bridge() {
    let ws = workspace();
    let parents = launch(&ws);
    let child = fork_child(|| {
        let own = launch(&ws);
        let mut failures = i32::from(!own.owned_by_this_process());
        failures |= i32::from(ping(own.base_url(), own.token()) != 200) << 1;
        let dir = own.ready().auth_token_file.parent().unwrap().to_path_buf();
        let pid = own.ready().pid;
        drop(own);
        failures |= i32::from(alive(pid) || dir.exists()) << 2;
        failures
    });
    // Bits: 1 not owned, 2 no pong, 4 not cleaned up by drop.
    assert_eq!(wait_child(child, Duration::from_secs(60)), 0);
    assert_intact(&parents);
    assert_stop_cleans_up(parents);
}
