//! The managed bridge against the REAL cursor-sdk-bridge (fetched by `make fetch-bridge`).
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cursor_sdk::bridge::{self, LaunchOptions, ManagedBridge};
use cursor_sdk::ErrorKind;

/// The real bridge (`tests/common`): a missing bridge fails loudly instead of skipping.
use common::real_bridge as bridge_bin;

/// A scratch directory, removed on drop.
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("cursor-sdk-test-{tag}-"))
        .tempdir()
        .unwrap()
}

fn opts(ws: &tempfile::TempDir) -> LaunchOptions {
    LaunchOptions {
        bridge_path: Some(bridge_bin()),
        workspace: Some(ws.path().to_path_buf()),
        ..Default::default()
    }
}

/// Minimal HTTP/1.1 client: one POST on a fresh connection; returns (status, body).
fn post(base_url: &str, path: &str, token: &str, body: &str) -> (u16, String) {
    let authority = base_url.strip_prefix("http://").unwrap();
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Connect-Protocol-Version: 1\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut status_line = String::new();
    r.read_line(&mut status_line).unwrap();
    let status: u16 = status_line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut len = None;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-length" => len = Some(v.trim().parse::<usize>().unwrap()),
            "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if let Some(n) = len {
        body.resize(n, 0);
        r.read_exact(&mut body).unwrap();
    } else if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

const PING: &str = "/sdk.v1.SdkBridgeControlService/Ping";

fn ping(b: &ManagedBridge) -> (u16, String) {
    post(b.base_url(), PING, b.token(), "{}")
}

/// Is this pid a live, non-zombie process?
fn alive(pid: u32) -> bool {
    // SAFETY: kill(pid, 0) only checks.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            state != "Z" && state != "X"
        }
        Err(_) => !cfg!(target_os = "linux"),
    }
}

/// Does any process (zombies included) remain in this process group?
fn group_exists(pgid: u32) -> bool {
    // SAFETY: killpg(pgid, 0) only checks.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

/// `ps` lines of the group's members, for failure messages.
fn group_members(pgid: u32) -> Vec<String> {
    let ps = Command::new("ps")
        .args(["-eo", "pid,ppid,pgid,stat,args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(&pgid.to_string()))
        .map(str::to_string)
        .collect()
}

/// Non-zombie members only (after host death, init reaps the orphans, lazily in some sandboxes).
fn group_has_live_members(pgid: u32) -> bool {
    group_members(pgid)
        .iter()
        .any(|l| !l.split_whitespace().nth(3).unwrap_or("").starts_with('Z'))
}

fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond().then(|| t0.elapsed())
}

fn token_dir(b: &ManagedBridge) -> PathBuf {
    let dir = b.ready().auth_token_file.parent().unwrap().to_path_buf();
    assert!(
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("cursor-sdk-bridge-"),
        "{}",
        dir.display()
    );
    dir
}

#[test]
fn handshake_ping_auth_and_stop_from_two_threads() {
    let ws = temp_dir("ws");
    let b = ManagedBridge::launch(&opts(&ws)).expect("launch");
    let r = b.ready();
    assert_eq!(r.server_version, "1.0.0");
    assert!(r.pid > 1 && r.pid != std::process::id());
    assert_eq!(r.host, "127.0.0.1");
    assert!(r.port > 0);
    assert_eq!(b.base_url(), format!("http://127.0.0.1:{}", r.port));
    assert_eq!(r.raw["workspaceRef"], ws.path().to_str().unwrap());
    assert!(r.raw.get("authToken").is_none());
    assert_eq!(b.token().len(), 43, "a 32-byte base64url token");
    assert!(b
        .token()
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    let dir = token_dir(&b);
    assert!(dir.is_dir());
    assert!(b.is_alive());
    assert!(b.exit_error().is_none());
    assert!(alive(r.pid));

    assert_eq!(ping(&b), (200, r#"{"message":"pong"}"#.to_string()));
    let (status, _) = post(b.base_url(), PING, "wrong-token", "{}");
    assert_eq!(status, 401);

    let tail = b.stderr_tail();
    assert!(tail.contains("cursor-sdk-bridge ready {"), "{tail}");
    assert!(!tail.contains(b.token()));
    assert!(!format!("{:?} {b:?}", b.ready()).contains(b.token()));

    // Stop from two threads at once: both return, bounded, everything gone.
    let pid = r.pid;
    let pgid = b.process_group();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| b.stop(None));
        s.spawn(|| b.stop(None));
    });
    let took = t0.elapsed();
    eprintln!("stop took {took:?}");
    assert!(took < Duration::from_secs(7), "{took:?}");
    assert!(!alive(pid), "node survived stop");
    // Stop reaps every process through its own parent: not even a zombie is left in the group.
    assert!(!group_exists(pgid), "left in group {pgid}: {:#?}", group_members(pgid));
    assert!(!dir.exists(), "token dir left behind");
    assert!(b.io_threads_finished(), "a helper thread outlived stop");
    assert!(!b.is_alive());
    assert_eq!(b.exit_error().unwrap().kind, ErrorKind::BridgeExited);
    b.stop(None); // still idempotent
}

#[test]
fn graceful_stop_uses_the_callers_shutdown_and_is_fast() {
    let ws = temp_dir("ws");
    let b = ManagedBridge::launch(&opts(&ws)).expect("launch");
    let (pid, dir, pgid) = (b.ready().pid, token_dir(&b), b.process_group());
    let url = b.base_url().to_string();
    let token = b.token().to_string();
    let calls = AtomicUsize::new(0);
    let shutdown = || {
        calls.fetch_add(1, Ordering::SeqCst);
        post(&url, "/sdk.v1.SdkBridgeControlService/Shutdown", &token, "{}").0 == 200
    };
    let t0 = Instant::now();
    b.stop(Some(&shutdown));
    let took = t0.elapsed();
    eprintln!("graceful stop took {took:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(!alive(pid) && !dir.exists());
    assert!(!group_exists(pgid), "left in group {pgid}: {:#?}", group_members(pgid));
    b.stop(Some(&shutdown));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "graceful runs once");
}

#[test]
fn drop_stops_everything() {
    let ws = temp_dir("ws");
    let b = ManagedBridge::launch(&opts(&ws)).expect("launch");
    let (pid, dir, pgid) = (b.ready().pid, token_dir(&b), b.process_group());
    assert_eq!(ping(&b).0, 200);
    let t0 = Instant::now();
    drop(b);
    assert!(t0.elapsed() < Duration::from_secs(7));
    assert!(!alive(pid) && !dir.exists());
    assert!(!group_exists(pgid), "left in group {pgid}: {:#?}", group_members(pgid));
}

#[test]
fn exit_before_ready_reports_stderr() {
    let ws = temp_dir("ws");
    let o = LaunchOptions {
        args: vec!["--bogus".into()],
        ..opts(&ws)
    };
    let e = ManagedBridge::launch(&o).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
    assert!(e.message.contains("Unknown argument: --bogus"), "{}", e.message);
    assert!(
        e.message.contains("exited before it was ready (exit status 1)"),
        "{}",
        e.message
    );
}

#[test]
fn startup_timeout_kills_the_fake_bridge() {
    let t = temp_dir("fake");
    let (fake, pids) = fake_bridge(&t, "fake bridge warming up");
    let o = LaunchOptions {
        bridge_path: Some(fake),
        workspace: Some(t.path().to_path_buf()),
        startup_timeout: Duration::from_millis(1500),
        ..Default::default()
    };
    let t0 = Instant::now();
    let e = ManagedBridge::launch(&o).unwrap_err();
    let took = t0.elapsed();
    eprintln!("timeout error after {took:?}: {}", e.message);
    assert!(took >= Duration::from_millis(1450) && took < Duration::from_millis(1500) + Duration::from_secs(7));
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
    assert!(e.message.contains("start-up timed out"), "{}", e.message);
    assert!(e.message.contains("fake bridge warming up"), "{}", e.message);
    assert_fake_gone(&pids);
}

#[test]
fn verbose_bridge_keeps_working_because_stderr_is_drained() {
    let ws = temp_dir("ws");
    let lines = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let sink_lines = lines.clone();
    let o = LaunchOptions {
        verbose: true,
        on_stderr_line: Some(Arc::new(move |l: &str| sink_lines.lock().push(l.to_string()))),
        ..opts(&ws)
    };
    let b = ManagedBridge::launch(&o).expect("launch");
    // One kept-alive connection would be faster, but fresh ones are simpler and still quick.
    for i in 0..500 {
        assert_eq!(ping(&b).0, 200, "ping {i}");
    }
    assert!(b.is_alive());
    let n = lines.lock().len();
    assert!(n > 0, "verbose bridge logged nothing");
    assert!(lines.lock().iter().all(|l| !l.contains(b.token())));
    assert!(!lines.lock().iter().any(|l| l.starts_with("cursor-sdk-bridge ready ")));
    assert!(b.stderr_tail().len() <= bridge::TAIL_BYTES);
    eprintln!("{n} verbose stderr lines; last: {:?}", lines.lock().last());
}

#[test]
fn node_killed_from_outside_is_noticed_quickly() {
    let ws = temp_dir("ws");
    let b = ManagedBridge::launch(&opts(&ws)).expect("launch");
    let pid = b.ready().pid;
    // SAFETY: killing the bridge's node, which this test owns.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let took = wait_for(Duration::from_secs(2), || !b.is_alive()).expect("is_alive still true after 2 s");
    eprintln!("death noticed after {took:?}");
    let e = b.exit_error().expect("exit_error after death");
    assert_eq!(e.kind, ErrorKind::BridgeExited);
    assert!(
        e.message.contains("exit status 137 (killed by signal 9)"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("cursor-sdk-bridge ready"),
        "tail missing: {}",
        e.message
    );
    assert!(!e.message.contains(b.token()));
    let dir = token_dir(&b);
    b.stop(None);
    assert!(!dir.exists());
}

#[test]
fn bridge_launched_from_a_short_lived_thread_survives_it() {
    let ws = temp_dir("ws");
    let o = opts(&ws);
    let b = std::thread::spawn(move || ManagedBridge::launch(&o).expect("launch"))
        .join()
        .unwrap();
    // PR_SET_PDEATHSIG would fire right when that thread exited; give it time to do harm.
    std::thread::sleep(Duration::from_millis(500));
    assert!(b.is_alive());
    assert!(alive(b.ready().pid));
    assert_eq!(ping(&b).0, 200);
}

const HOST_ENV: &str = "CURSOR_SDK_TEST_BRIDGE_HOST";
const HOST_EXIT_ENV: &str = "CURSOR_SDK_TEST_BRIDGE_HOST_EXIT";

/// Not a test on its own: the host process for `host_sigkill_leaves_no_orphan`, which runs this
/// binary again with only this test and HOST_ENV set.
#[test]
#[ignore = "runs only as the child of host_sigkill_leaves_no_orphan"]
fn host_process_for_sigkill_test() {
    let Some(ws) = std::env::var_os(HOST_ENV) else {
        eprintln!("host_process_for_sigkill_test: only meaningful as a child of host_sigkill_leaves_no_orphan");
        return;
    };
    let exit_normally = std::env::var_os(HOST_EXIT_ENV).is_some();
    let b = ManagedBridge::launch(&LaunchOptions {
        bridge_path: Some(bridge_bin()),
        workspace: Some(PathBuf::from(ws)),
        ..Default::default()
    })
    .expect("launch in host");
    println!(
        "HOST-READY pid={} pgid={} dir={}",
        b.ready().pid,
        b.process_group(),
        b.ready().auth_token_file.parent().unwrap().display()
    );
    std::io::stdout().flush().unwrap();
    if exit_normally {
        // Neither stop nor drop: only the atexit hook can clean up before the process is gone.
        std::mem::forget(b);
        return;
    }
    std::thread::sleep(Duration::from_secs(120));
    unreachable!("the parent test SIGKILLs this process");
}

/// Runs `host_process_for_sigkill_test` in a fresh process of this test binary; returns the
/// child and its ready line's (node pid, process group, token dir).
fn spawn_host(ws: &tempfile::TempDir, exit_normally: bool) -> (std::process::Child, u32, u32, PathBuf) {
    bridge_bin();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "host_process_for_sigkill_test",
        "--nocapture",
        "--include-ignored",
    ])
    .env(HOST_ENV, ws.path())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if exit_normally {
        cmd.env(HOST_EXIT_ENV, "1");
    }
    let mut host = cmd.spawn().unwrap();
    let out = BufReader::new(host.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if line.starts_with("HOST-READY ") {
                let _ = tx.send(line);
            }
        }
    });
    let line = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(l) => l,
        Err(_) => {
            let _ = host.kill();
            let _ = host.wait();
            panic!("host never reported ready");
        }
    };
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap()
            .to_string()
    };
    (
        host,
        field("pid=").parse().unwrap(),
        field("pgid=").parse().unwrap(),
        PathBuf::from(field("dir=")),
    )
}

/// On failure, do not leave the orphan behind.
fn cleanup_and_panic(pid: u32, pgid: u32, dir: &Path, msg: String) -> ! {
    // SAFETY: killing the bridge this test started.
    unsafe {
        libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    let _ = std::fs::remove_dir_all(dir);
    panic!("{msg}");
}

#[test]
fn host_sigkill_leaves_no_orphan() {
    let ws = temp_dir("host");
    let (mut host, pid, pgid, dir) = spawn_host(&ws, false);
    assert!(alive(pid) && dir.is_dir());

    host.kill().unwrap(); // SIGKILL: no destructors, no atexit
    host.wait().unwrap();
    let t0 = Instant::now();
    let gone = wait_for(Duration::from_secs(2), || !alive(pid));
    eprintln!("node gone after host SIGKILL: {gone:?}");
    if gone.is_none() {
        cleanup_and_panic(
            pid,
            pgid,
            &dir,
            format!("node {pid} still alive 2 s after the host was SIGKILLed"),
        );
    }
    let rest = Duration::from_secs(2).saturating_sub(t0.elapsed()) + Duration::from_millis(500);
    if wait_for(rest, || !dir.exists()).is_none() {
        cleanup_and_panic(
            pid,
            pgid,
            &dir,
            format!("token dir {} not removed after host death", dir.display()),
        );
    }
    if wait_for(Duration::from_secs(2), || !group_has_live_members(pgid)).is_none() {
        cleanup_and_panic(
            pid,
            pgid,
            &dir,
            format!("left in group {pgid}: {:#?}", group_members(pgid)),
        );
    }
}

#[test]
fn atexit_stops_a_leaked_bridge_at_normal_exit() {
    let ws = temp_dir("host");
    let (mut host, pid, pgid, dir) = spawn_host(&ws, true);
    let status = host.wait().unwrap();
    // The lifeline would also fire now, but only after node's exit; the hook ran before the
    // host was gone, so at this instant everything is already cleaned up.
    let dir_left = dir.exists();
    let node_left = alive(pid);
    if !status.success() || dir_left || node_left {
        cleanup_and_panic(
            pid,
            pgid,
            &dir,
            format!("host {status}; token dir left: {dir_left}; node alive: {node_left}"),
        );
    }
}

/// A fake bridge: a shell script that records its pids (before any output, so they are known
/// whatever launch does next), prints `stderr_text` and sleeps.
fn fake_bridge(t: &tempfile::TempDir, stderr_text: &str) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let fake = t.path().join("cursor-sdk-bridge");
    let pids = t.path().join("pids");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nsleep 300 &\necho \"$$ $!\" > '{}'\ncat >&2 <<'EOF'\n{stderr_text}\nEOF\nwait\n",
            pids.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    (fake, pids)
}

fn assert_fake_gone(pids: &Path) {
    let text = std::fs::read_to_string(pids).unwrap();
    for pid in text.split_whitespace().map(|p| p.parse::<u32>().unwrap()) {
        assert!(!alive(pid), "fake bridge process {pid} survived");
    }
}

#[test]
fn bad_ready_line_fails_without_leaking_the_inline_token() {
    let secret = "INLINE-secret-token-0123456789abcdefghijklm";
    let t = temp_dir("fake");
    let (fake, pids) = fake_bridge(
        &t,
        &format!(r#"cursor-sdk-bridge ready {{"schemaVersion":2,"pid":1,"authToken":"{secret}"}}"#),
    );
    let o = LaunchOptions {
        bridge_path: Some(fake),
        workspace: Some(t.path().to_path_buf()),
        ..Default::default()
    };
    let e = ManagedBridge::launch(&o).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed);
    assert!(e.message.contains("unsupported schemaVersion 2"), "{}", e.message);
    assert!(!e.message.contains(secret), "{}", e.message);
    assert!(
        e.message.contains("cursor-sdk-bridge ready {"),
        "redacted line expected: {}",
        e.message
    );
    assert_fake_gone(&pids);
}

#[test]
fn old_bridge_with_inline_token_works_and_the_token_stays_secret() {
    let secret = "INLINE-secret-token-0123456789abcdefghijklm";
    let t = temp_dir("fake");
    // The fake announces its own shell's pid as node: stop must still take it down.
    let (fake, pids) = fake_bridge(
        &t,
        &format!(
            r#"cursor-sdk-bridge ready {{"schemaVersion":1,"transport":"tcp","protocol":"connect","pid":1,"host":"::1","port":9,"authToken":"{secret}"}}
later line with {secret} inside"#
        ),
    );
    let seen = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let o = LaunchOptions {
        bridge_path: Some(fake),
        workspace: Some(t.path().to_path_buf()),
        on_stderr_line: Some(Arc::new(move |l: &str| sink.lock().push(l.to_string()))),
        ..Default::default()
    };
    let b = ManagedBridge::launch(&o).unwrap();
    assert_eq!(b.token(), secret);
    assert_eq!(b.base_url(), "http://[::1]:9");
    assert!(b.ready().raw.get("authToken").is_none());
    wait_for(Duration::from_secs(2), || !seen.lock().is_empty());
    assert_eq!(*seen.lock(), vec!["later line with <redacted> inside".to_string()]);
    assert!(!b.stderr_tail().contains(secret));
    let pgid = b.process_group();
    let t0 = Instant::now();
    b.stop(None);
    assert!(t0.elapsed() < Duration::from_secs(7));
    assert_fake_gone(&pids);
    assert!(!group_has_live_members(pgid), "{:#?}", group_members(pgid));
}

#[test]
fn locate_finds_the_real_bridge_and_its_manifest_is_sdk_v1() {
    let bin = bridge_bin();
    assert_eq!(bridge::locate(Some(&bin)).unwrap(), bin);
    bridge::check_manifest(&bin).unwrap();
    // Via the cache variable only (injected env, no process env mutation).
    let cache = bin.ancestors().nth(4).unwrap().to_path_buf();
    let env = move |k: &str| (k == bridge::ENV_BRIDGE_CACHE).then(|| cache.clone().into_os_string());
    assert_eq!(bridge::locate_with(None, &env).unwrap(), bin);
    assert!(Path::new(&bin).exists());
}

/// A fake bridge that announces `token_file` in its ready line, with its own shell as node.
/// `prepare` is shell code run first (e.g. to make the token directory).
fn fake_with_token_file(t: &tempfile::TempDir, prepare: &str, token_file: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let fake = t.path().join("cursor-sdk-bridge");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n{prepare}\n\
             echo \"cursor-sdk-bridge ready {{\\\"schemaVersion\\\":1,\\\"transport\\\":\\\"tcp\\\",\\\"protocol\\\":\\\"connect\\\",\\\"pid\\\":$$,\\\"host\\\":\\\"127.0.0.1\\\",\\\"port\\\":9,\\\"authTokenFile\\\":\\\"{token_file}\\\"}}\" >&2\n\
             exec sleep 300\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

fn launch_fake(t: &tempfile::TempDir, fake: PathBuf) -> ManagedBridge {
    ManagedBridge::launch(&LaunchOptions {
        bridge_path: Some(fake),
        workspace: Some(t.path().to_path_buf()),
        env: vec![("TMPDIR".into(), t.path().into())],
        ..Default::default()
    })
    .expect("launch the fake")
}

#[test]
fn stop_leaves_a_users_directory_named_like_the_bridges_alone() {
    use std::os::unix::fs::PermissionsExt;
    let t = temp_dir("fake");
    let token = "users-token-0123456789-abcdefghijklmnopqrstu";
    // A user's directory with the bridge's name, its own file, and an auth-token the fake
    // bridge names in its ready line (so launch succeeds and stop has something to judge).
    let users = t.path().join("cursor-sdk-bridge-xyz");
    std::fs::create_dir(&users).unwrap();
    std::fs::write(users.join("notes.txt"), "mine").unwrap();
    std::fs::write(users.join("auth-token"), token).unwrap();
    // Even one that looks exactly like the bridge's (0700, only the token) but predates the launch.
    let lookalike = t.path().join("cursor-sdk-bridge-old");
    std::fs::create_dir(&lookalike).unwrap();
    std::fs::set_permissions(&lookalike, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(lookalike.join("auth-token"), token).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    for dir in [&users, &lookalike] {
        let file = dir.join("auth-token");
        let b = launch_fake(&t, fake_with_token_file(&t, "", file.to_str().unwrap()));
        assert_eq!(b.token(), token);
        let pgid = b.process_group();
        b.stop(None);
        assert!(!group_has_live_members(pgid), "{:#?}", group_members(pgid));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), token, "{}", dir.display());
    }
    assert_eq!(std::fs::read_to_string(users.join("notes.txt")).unwrap(), "mine");
}

#[test]
fn stop_removes_a_token_directory_made_like_the_bridge_makes_it() {
    let t = temp_dir("fake");
    // What the real bridge does: mkdtemp in $TMPDIR, then the token without a newline.
    let prepare = "d=$(mktemp -d \"$TMPDIR/cursor-sdk-bridge-XXXXXX\") || exit 1\n\
                   printf %s fake-token-0123456789 > \"$d/auth-token\"";
    let b = launch_fake(&t, fake_with_token_file(&t, prepare, "$d/auth-token"));
    let dir = b.ready().auth_token_file.parent().unwrap().to_path_buf();
    assert!(dir.starts_with(t.path()) && dir.is_dir(), "{}", dir.display());
    assert_eq!(b.token(), "fake-token-0123456789");
    b.stop(None);
    assert!(!dir.exists(), "{} left behind", dir.display());
}
