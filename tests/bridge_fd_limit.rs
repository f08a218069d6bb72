//! A host at its file-descriptor limit cannot read `/proc`: that must not make a healthy bridge
//! look dead (the client would replace it). One test only: it exhausts this process's fds, which
//! would break anything running beside it.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use cursor_sdk::bridge::{LaunchOptions, ManagedBridge};

/// The real bridge (`tests/common`): a missing bridge fails loudly instead of skipping.
use common::real_bridge as bridge_bin;

fn get_limit() -> libc::rlimit {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out pointer.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    l
}

fn set_soft_limit(soft: libc::rlim_t) {
    let l = libc::rlimit {
        rlim_cur: soft,
        rlim_max: get_limit().rlim_max,
    };
    // SAFETY: valid pointer; lowering (or restoring) the soft limit only.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) }, 0);
}

#[test]
fn a_host_out_of_fds_still_sees_its_bridge_alive() {
    let ws = tempfile::Builder::new()
        .prefix("cursor-sdk-test-fd-")
        .tempdir()
        .unwrap();
    let b = ManagedBridge::launch(&LaunchOptions {
        bridge_path: Some(bridge_bin()),
        workspace: Some(ws.path().to_path_buf()),
        ..Default::default()
    })
    .expect("launch");
    let original = get_limit().rlim_cur;
    let highest = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::rlim_t>().ok())
        .max()
        .unwrap();
    set_soft_limit(highest + 32);
    let mut fillers = Vec::new();
    let exhausted = loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) => break e,
        }
    };
    let proc_read = std::fs::read_to_string(format!("/proc/{}/stat", b.ready().pid));
    let checks: Vec<(bool, bool)> = (0..20)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            (b.is_alive(), b.exit_error().is_none())
        })
        .collect();
    drop(fillers);
    set_soft_limit(original);

    assert_eq!(exhausted.raw_os_error(), Some(libc::EMFILE), "{exhausted}");
    assert_eq!(
        proc_read.map_err(|e| e.raw_os_error()),
        Err(Some(libc::EMFILE)),
        "the test needs /proc to be unreadable"
    );
    assert!(
        checks.iter().all(|&c| c == (true, true)),
        "(is_alive, no exit_error) at the fd limit: {checks:?}"
    );
    let dir = b.ready().auth_token_file.parent().unwrap().to_path_buf();
    let pid = b.ready().pid;
    b.stop(None);
    assert!(!dir.exists());
    assert!(
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_err(),
        "node survived stop"
    );
}
