//! The shared warm bridge (`sharedBridge`): warm attach, two processes racing, idle exit, stale
//! registrations, host SIGKILL, refusals. Every test uses its own runtime directory (a private
//! `XDG_RUNTIME_DIR`, so the user's real registry is never touched) and stops every shared
//! bridge it made. Tests take a lock: they set the process environment.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{eventually, Sandbox};
use cursor_sdk::{Client, ClientOptions, ErrorKind};

static ENV_LOCK: Mutex<()> = Mutex::new(());

const HELPER_ENV: &str = "CURSOR_SDK_TEST_SHARED_HELPER";
const RUNTIME_ENV: &str = "XDG_RUNTIME_DIR";

/// A private runtime directory, set as `XDG_RUNTIME_DIR` for the test's duration. On drop it
/// stops every keeper it saw (registered or remembered) and checks that none is left.
struct Runtime {
    base: tempfile::TempDir,
    keepers: Vec<u32>,
    _guard: std::sync::MutexGuard<'static, ()>,
}

impl Runtime {
    fn new() -> Runtime {
        let guard = ENV_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = tempfile::Builder::new().prefix("cursor-sdk-rt-").tempdir().unwrap();
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::env::set_var(RUNTIME_ENV, base.path());
        std::env::remove_var("CURSOR_SDK_SHARED_BRIDGE");
        Runtime {
            base,
            keepers: Vec::new(),
            _guard: guard,
        }
    }

    fn dir(&self) -> PathBuf {
        self.base.path().join("cursor-sdk")
    }

    /// The (only) registration file.
    fn registration_path(&self) -> PathBuf {
        let regs = self.files("json");
        assert_eq!(regs.len(), 1, "expected one registration, found {regs:?}");
        regs[0].clone()
    }

    fn registration(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.registration_path()).unwrap()).unwrap()
    }

    fn files(&self, ext: &str) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(self.dir()) else {
            return Vec::new();
        };
        rd.map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
    }

    /// Remembers the registered keeper so that drop stops it even if the test replaces it.
    fn remember(&mut self) -> (u32, u32) {
        let r = self.registration();
        let (keeper, bridge) = (
            r["keeperPid"].as_u64().unwrap() as u32,
            r["bridgePid"].as_u64().unwrap() as u32,
        );
        if !self.keepers.contains(&keeper) {
            self.keepers.push(keeper);
        }
        (keeper, bridge)
    }

    fn stop_all(&mut self) {
        for p in self.files("json") {
            if let Ok(v) = std::fs::read_to_string(&p).map(|t| serde_json::from_str::<serde_json::Value>(&t)) {
                if let Some(k) = v.ok().and_then(|v| v["keeperPid"].as_u64()) {
                    self.keepers.push(k as u32);
                }
            }
        }
        for &k in &self.keepers {
            if alive(k) {
                // SAFETY: SIGTERM to a keeper this test started (checked alive just now).
                unsafe { libc::kill(k as libc::pid_t, libc::SIGTERM) };
            }
        }
        for &k in &self.keepers {
            let stopped = eventually(Duration::from_secs(8), || !alive(k));
            // In a test that failed already, a second panic here would abort the whole binary.
            assert!(stopped || std::thread::panicking(), "keeper {k} did not stop");
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_all();
        std::env::remove_var(RUNTIME_ENV);
    }
}

/// Alive and not a zombie (keepers are orphans; a lazy init may leave them unreaped a while).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !matches!(s.rsplit_once(") ").map(|(_, r)| r.as_bytes()[0]), Some(b'Z' | b'X')),
        Err(_) => false,
    }
}

fn double_options(sb: &Sandbox, idle_ms: u64) -> ClientOptions {
    ClientOptions {
        bridge_path: Some(common::double_bin()),
        workspace: Some(sb.path()),
        api_key: Some("k".into()),
        shared_bridge: Some(true),
        shared_bridge_idle_ms: Some(idle_ms),
        ..ClientOptions::default()
    }
}

fn shared_client(o: &ClientOptions) -> (Client, u32, Duration) {
    let t0 = Instant::now();
    let c = Client::new(o.clone()).unwrap();
    c.ping().unwrap();
    let took = t0.elapsed();
    let pid = c.bridge_pid().unwrap();
    (c, pid, took)
}

#[test]
fn a_second_client_attaches_warm_to_the_same_bridge() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let o = double_options(&sb, 60_000);
    let (a, pid_a, cold) = shared_client(&o);
    assert!(a.is_shared() && !a.is_attached());
    let (keeper, reg_pid) = rt.remember();
    assert_eq!(reg_pid, pid_a);
    let (b, pid_b, warm) = shared_client(&o);
    eprintln!("cold start+ping {cold:?}, warm attach+ping {warm:?}");
    assert_eq!(pid_a, pid_b, "the second client started its own bridge");
    assert!(warm < Duration::from_secs(1), "warm attach took {warm:?}");
    assert_eq!(a.bridge_endpoint().unwrap(), b.bridge_endpoint().unwrap());
    // Neither client's end stops the shared bridge.
    drop(a);
    b.shutdown();
    drop(b);
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid_a) && alive(keeper));
    let (c, pid_c, _) = shared_client(&o);
    assert_eq!(pid_c, pid_a);
    // Another configuration (here: bridgeEnv) gets a bridge of its own.
    let mut other = o.clone();
    other.bridge_env.insert("X".into(), "1".into());
    let (d, pid_d, _) = shared_client(&other);
    assert_ne!(pid_d, pid_a);
    assert_eq!(rt.files("json").len(), 2);
    drop((c, d));
    rt.stop_all();
    assert!(!alive(pid_a) && !alive(pid_d));
    assert!(
        rt.files("json").is_empty(),
        "registrations left: {:?}",
        rt.files("json")
    );
}

#[test]
fn the_real_bridge_is_shared_too() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let mut o = sb.options();
    o.shared_bridge = Some(true);
    let (a, pid_a, cold) = shared_client(&o);
    let (keeper, _) = rt.remember();
    let token_dir = {
        let r = rt.registration();
        assert!(r["token"].as_str().is_some_and(|t| t.len() >= 32));
        let note = rt.files("tokendir");
        assert_eq!(note.len(), 1, "the token directory is noted for removal");
        PathBuf::from(std::fs::read_to_string(&note[0]).unwrap())
    };
    assert!(token_dir.is_dir());
    let (b, pid_b, warm) = shared_client(&o);
    eprintln!("real bridge: cold start+ping {cold:?}, warm attach+ping {warm:?}");
    assert_eq!(pid_a, pid_b);
    assert!(warm < Duration::from_secs(1), "warm attach took {warm:?}");
    let agent = b.create_agent(Default::default()).unwrap();
    assert!(!agent.id().is_empty());
    drop((a, agent, b));
    rt.stop_all();
    assert!(!alive(keeper) && !alive(pid_a));
    assert!(
        !token_dir.exists(),
        "the keeper removes the real bridge's token directory"
    );
    let left: Vec<_> = std::fs::read_dir(rt.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_shared_bridge_killed_from_outside_fails_one_call_and_is_replaced() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let (c, pid, _) = shared_client(&double_options(&sb, 60_000));
    let (keeper, _) = rt.remember();
    // SAFETY: SIGKILL to the bridge this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let e = c.ping().unwrap_err();
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e:?}");
    // Its keeper unregisters it and exits; the next call gets a new shared bridge.
    assert!(eventually(Duration::from_secs(5), || !alive(keeper)));
    c.ping().unwrap();
    let new = c.bridge_pid().unwrap();
    assert_ne!(new, pid);
    assert_eq!(rt.remember().1, new);
}

/// Not a test on its own: a client process for the multi-process tests (see `run_helper`).
#[test]
#[ignore = "runs only as a child of the shared_bridge tests"]
fn helper_process() {
    let Some(mode) = std::env::var_os(HELPER_ENV) else {
        eprintln!("helper_process: only meaningful as a child of the shared_bridge tests");
        return;
    };
    let ws = PathBuf::from(std::env::var_os("CURSOR_SDK_TEST_WS").unwrap());
    let o = ClientOptions {
        bridge_path: Some(common::double_bin()),
        workspace: Some(ws.clone()),
        api_key: Some("k".into()),
        shared_bridge: Some(true),
        shared_bridge_idle_ms: Some(60_000),
        ..ClientOptions::default()
    };
    let c = Client::new(o.clone()).unwrap();
    c.ping().unwrap();
    let mut line = format!("HELPER pid={}", c.bridge_pid().unwrap());
    let private = (mode == "hold").then(|| {
        let p = Client::new(ClientOptions {
            shared_bridge: Some(false),
            ..o
        })
        .unwrap();
        p.ping().unwrap();
        line += &format!(" private={}", p.bridge_pid().unwrap());
        p
    });
    println!("{line}");
    if private.is_some() {
        std::thread::sleep(Duration::from_secs(60));
        unreachable!("the parent test SIGKILLs this process");
    }
}

/// Starts `helper_process` in a fresh process of this test binary.
fn run_helper(mode: &str, ws: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "helper_process",
            "--nocapture",
            "--include-ignored",
            "--quiet",
        ])
        .env(HELPER_ENV, mode)
        .env("CURSOR_SDK_TEST_WS", ws)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The helper's `HELPER …` line as key → value, and a receiver told when its stdout closes.
fn helper_line(
    child: &mut std::process::Child,
) -> (std::collections::HashMap<String, u32>, std::sync::mpsc::Receiver<()>) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("HELPER "))
        .expect("the helper printed no HELPER line");
    // The harness prints on after it: keep reading, or it fails on a broken pipe.
    let (tx, eof) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        lines.for_each(drop);
        let _ = tx.send(());
    });
    let fields = line
        .split_whitespace()
        .skip(1)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    (fields, eof)
}

#[test]
fn two_processes_starting_at_once_share_one_bridge() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let mut a = run_helper("once", &sb.path());
    let mut b = run_helper("once", &sb.path());
    let ((la, eof_a), (lb, eof_b)) = (helper_line(&mut a), helper_line(&mut b));
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    // The keeper (forked from one of them) holds none of their descriptors: their stdout closes.
    for eof in [eof_a, eof_b] {
        eof.recv_timeout(Duration::from_secs(5))
            .expect("a helper's stdout stayed open after it exited (held by the keeper?)");
    }
    assert_eq!(la["pid"], lb["pid"], "two bridges for one configuration");
    let (_, registered) = rt.remember();
    assert_eq!(registered, la["pid"]);
    assert_eq!(rt.files("lease").len(), 1, "one instance: {:?}", rt.files("lease"));
    // Both processes are gone; the bridge serves on.
    assert!(alive(registered));
    let (_c, pid, _) = shared_client(&double_options(&sb, 60_000));
    assert_eq!(pid, registered);
}

#[test]
fn an_idle_shared_bridge_exits_and_unregisters() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let o = double_options(&sb, 1000);
    let (c, pid, _) = shared_client(&o);
    let (keeper, _) = rt.remember();
    // In use: no idle exit however long it takes.
    std::thread::sleep(Duration::from_millis(1600));
    c.ping().unwrap();
    drop(c);
    let t0 = Instant::now();
    assert!(eventually(Duration::from_secs(6), || !alive(pid) && !alive(keeper)));
    let after = t0.elapsed();
    eprintln!("idle exit {after:?} after the last client");
    assert!(
        after >= Duration::from_millis(900),
        "exited before the idle period: {after:?}"
    );
    assert!(rt.files("json").is_empty() && rt.files("lease").is_empty() && rt.files("log").is_empty());
    // The next client starts a new one.
    let (_d, pid2, _) = shared_client(&o);
    assert_ne!(pid2, pid);
    rt.remember();
}

#[test]
fn stale_registrations_are_never_trusted_and_are_replaced() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let o = double_options(&sb, 60_000);
    let (c, first, _) = shared_client(&o);
    drop(c);
    rt.remember();
    let reg_path = rt.registration_path();
    let mut reg = rt.registration();

    // A wrong token: the bridge answers 401, the registration is replaced, its bridge left.
    reg["token"] = "not-the-token-0123456789abcdefghijklmnopqrstu".into();
    std::fs::write(&reg_path, reg.to_string()).unwrap();
    let (c, second, _) = shared_client(&o);
    assert_ne!(second, first, "attached with a wrong token");
    assert!(
        alive(first),
        "the bridge of a wrong-token registration is not ours to kill"
    );
    assert_ne!(rt.registration()["token"], reg["token"]);
    drop(c);
    rt.remember();

    // World-readable (0644): never read, replaced.
    std::fs::set_permissions(&reg_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (c, third, _) = shared_client(&o);
    assert!(third != second && third != first);
    let mode = std::fs::metadata(rt.registration_path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    drop(c);
    rt.remember();

    // Another user's file (we run as root here, or cannot chown: then the mode case stands).
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        std::os::unix::fs::chown(rt.registration_path(), Some(65534), Some(65534)).unwrap();
        let (c, fourth, _) = shared_client(&o);
        assert!(
            ![first, second, third].contains(&fourth),
            "trusted another user's registration"
        );
        drop(c);
        rt.remember();
    }

    // A dead keeper: the registration names processes that are gone.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let mut reg = rt.registration();
    reg["keeperPid"] = dead_pid.into();
    std::fs::write(rt.registration_path(), reg.to_string()).unwrap();
    let (_c, fifth, _) = shared_client(&o);
    assert_ne!(Some(fifth), reg["bridgePid"].as_u64().map(|p| p as u32));
    assert_ne!(rt.registration()["keeperPid"], dead_pid);
    rt.remember();
}

#[test]
fn a_sigkilled_host_leaves_the_shared_bridge_serving_and_takes_its_own_down() {
    let mut rt = Runtime::new();
    let sb = Sandbox::new();
    let mut host = run_helper("hold", &sb.path());
    let (line, _) = helper_line(&mut host);
    let (shared, private) = (line["pid"], line["private"]);
    rt.remember();
    host.kill().unwrap(); // SIGKILL
    host.wait().unwrap();
    assert!(
        eventually(Duration::from_secs(3), || !alive(private)),
        "the non-shared bridge outlived its host"
    );
    assert!(alive(shared), "the shared bridge died with a host");
    let (c, pid, _) = shared_client(&double_options(&sb, 60_000));
    assert_eq!(pid, shared);
    c.ping().unwrap();
}

struct NoStore;

impl cursor_sdk::Store for NoStore {
    fn call(&self, _: &str, _: &str, _: serde_json::Value) -> Result<Option<serde_json::Value>, String> {
        Err("unused".into())
    }
}

#[test]
fn features_that_need_a_bridge_of_their_own_are_refused() {
    let _rt = Runtime::new();
    let sb = Sandbox::new();
    let o = double_options(&sb, 60_000);
    let tool = || cursor_sdk::Tool::new("t", "d", serde_json::json!({"type": "object"}), |_call| Ok("x".into()));
    let c = Client::new(o.clone()).unwrap();
    let e = c.add_tool(tool()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains("custom tools") && e.message.contains("sharedBridge"),
        "{}",
        e.message
    );
    let store: std::sync::Arc<dyn cursor_sdk::Store> = std::sync::Arc::new(NoStore);
    let e = Client::with_store(o.clone(), store).err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains("store handler") && e.message.contains("sharedBridge"),
        "{}",
        e.message
    );
    let e = Client::new(ClientOptions {
        bridge_url: Some("http://127.0.0.1:9".into()),
        bridge_token: Some("t".into()),
        ..o.clone()
    })
    .err()
    .unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("sharedBridge"), "{}", e.message);
    let e = ClientOptions::from_json(Some(r#"{"sharedBridge":true,"sharedBridgeIdleMs":0}"#)).unwrap_err();
    assert!(e.message.contains("sharedBridgeIdleMs"), "{}", e.message);

    // The variable turns sharing on; the option's false wins; the error names the variable.
    std::env::set_var("CURSOR_SDK_SHARED_BRIDGE", "1");
    let plain = ClientOptions {
        shared_bridge: None,
        ..o.clone()
    };
    let c = Client::new(plain.clone()).unwrap();
    assert!(c.is_shared());
    let e = c.add_tool(tool()).unwrap_err();
    assert!(e.message.contains("CURSOR_SDK_SHARED_BRIDGE=1"), "{}", e.message);
    let off = Client::new(ClientOptions {
        shared_bridge: Some(false),
        ..plain
    })
    .unwrap();
    assert!(!off.is_shared());
    off.add_tool(tool()).unwrap();
    std::env::remove_var("CURSOR_SDK_SHARED_BRIDGE");
    // Nothing was started by any of this.
    assert!(_rt.files("json").is_empty());
}
