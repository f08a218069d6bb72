//! The first bridge of this process is launched from a thread that blocks every signal (as
//! Swift concurrency and GCD threads do) in a process that ignores SIGUSR2: none of that may
//! reach the bridge's processes, and the library's own threads block everything. One test only:
//! the spawner thread is created by the first launch of the process, which must be this one.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use cursor_sdk::bridge::{LaunchOptions, ManagedBridge};

/// The real bridge (`tests/common`): a missing bridge fails loudly instead of skipping.
use common::real_bridge as bridge_bin;

/// A hex mask field (`SigBlk`, `SigIgn`…) of a `/proc/…/status` file.
fn mask(status_file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(status_file).unwrap_or_else(|e| panic!("{status_file}: {e}"));
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {status_file}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

fn bit(sig: libc::c_int) -> u64 {
    1 << (sig - 1)
}

fn block_all_in_this_thread() {
    // SAFETY: changes only the calling thread's mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    }
}

/// (launch, stop) durations; checks the processes' and threads' signal state in between.
fn launch_check_stop(ws: &tempfile::TempDir) -> (Duration, Duration) {
    let t0 = Instant::now();
    let b = ManagedBridge::launch(&LaunchOptions {
        bridge_path: Some(bridge_bin()),
        workspace: Some(ws.path().to_path_buf()),
        ..Default::default()
    })
    .expect("launch");
    let launched = t0.elapsed();
    let supervisor = format!("/proc/{}/status", b.process_group());
    let node = format!("/proc/{}/status", b.ready().pid);
    assert_eq!(mask(&supervisor, "SigBlk"), 0, "supervisor starts with signals blocked");
    // The host ignores SIGPIPE (Rust's runtime) and SIGUSR2 (this test): not the supervisor,
    // which ignores nothing of its own.
    assert_eq!(mask(&supervisor, "SigIgn"), 0, "supervisor inherited ignored signals");
    assert_eq!(
        mask(&node, "SigBlk"),
        0,
        "node's main thread starts with signals blocked"
    );
    assert_eq!(
        mask(&node, "SigIgn") & bit(libc::SIGUSR2),
        0,
        "node inherited SIGUSR2 ignored"
    );

    // Our threads block everything a host might want for itself.
    let mut ours = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if comm.starts_with("cursor-sdk-") {
            ours += 1;
            let blocked = mask(task.join("status").to_str().unwrap(), "SigBlk");
            for sig in [
                libc::SIGINT,
                libc::SIGTERM,
                libc::SIGCHLD,
                libc::SIGHUP,
                libc::SIGUSR1,
                libc::SIGALRM,
            ] {
                assert_ne!(blocked & bit(sig), 0, "{} takes signal {sig}", comm.trim());
            }
        }
    }
    assert!(
        ours >= 3,
        "expected the spawner, reaper and stderr threads, found {ours}"
    );

    let t0 = Instant::now();
    b.stop(None);
    (launched, t0.elapsed())
}

#[test]
fn a_signal_blocking_host_thread_leaks_nothing_into_the_bridge() {
    let ws = tempfile::Builder::new()
        .prefix("cursor-sdk-test-sig-")
        .tempdir()
        .unwrap();
    // SAFETY: process-wide, but this binary runs nothing else.
    unsafe { libc::signal(libc::SIGUSR2, libc::SIG_IGN) };
    let (launch_masked, stop_masked) = std::thread::scope(|s| {
        s.spawn(|| {
            block_all_in_this_thread();
            let before = mask("/proc/thread-self/status", "SigBlk");
            let times = launch_check_stop(&ws);
            assert_eq!(
                mask("/proc/thread-self/status", "SigBlk"),
                before,
                "the caller's mask changed"
            );
            times
        })
        .join()
        .unwrap()
    });
    let (launch_plain, stop_plain) = launch_check_stop(&ws);
    eprintln!(
        "from a signal-blocking thread: launch {launch_masked:?}, stop {stop_masked:?}; \
         from a plain thread: launch {launch_plain:?}, stop {stop_plain:?}"
    );
    // With SIGCHLD blocked in the supervisor, stop took 3 s (its `wait` never returned).
    assert!(stop_masked < Duration::from_secs(1), "{stop_masked:?}");
    assert!(stop_plain < Duration::from_secs(1), "{stop_plain:?}");
}
