//! Shared test support: the fetched real bridge, isolated temp dirs, process checks.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cursor_sdk::{Client, ClientOptions, Event, EventKind};

/// The real bridge fetched by `make fetch-bridge`. Panics (never skips) when it is missing.
pub fn real_bridge() -> PathBuf {
    let cache = std::env::var_os("CURSOR_SDK_BRIDGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/bridge"));
    let bin = cache.join("cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge");
    assert!(
        bin.is_file(),
        "the real bridge is missing at {}: run `make fetch-bridge`",
        bin.display()
    );
    bin
}

/// A workspace and HOME for one bridge, so tests never touch the user's ~/.cursor.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::Builder::new().prefix("cursor-sdk-test-").tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Options for a real bridge that can create local agents offline (catalog env var).
    pub fn options(&self) -> ClientOptions {
        let mut o = ClientOptions {
            bridge_path: Some(real_bridge()),
            workspace: Some(self.path()),
            api_key: Some("test-dummy-key".into()),
            ..ClientOptions::default()
        };
        o.bridge_env
            .insert("HOME".into(), self.path().join("home").to_string_lossy().into_owned());
        o.bridge_env.insert(
            "CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON".into(),
            r#"[{"id":"composer-2"}]"#.into(),
        );
        o
    }

    pub fn client(&self) -> Client {
        Client::new(self.options()).unwrap()
    }
}

/// True while a process with this pid exists.
pub fn alive(pid: u32) -> bool {
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Waits up to `limit` for `cond`; returns whether it became true.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// A loopback TCP proxy in front of a bridge whose live connections a test can cut, to
/// simulate a dropped stream without harming the bridge.
pub struct CutProxy {
    pub url: String,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CutProxy {
    pub fn new(target_url: &str) -> CutProxy {
        use std::net::{TcpListener, TcpStream};
        use std::sync::atomic::Ordering;
        let target = target_url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::<TcpStream>::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c2, s2) = (conns.clone(), stop.clone());
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                let Ok((down, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                down.set_nonblocking(false).unwrap();
                let up = TcpStream::connect(&target).unwrap();
                c2.lock()
                    .unwrap()
                    .extend([down.try_clone().unwrap(), up.try_clone().unwrap()]);
                for (mut a, mut b) in [(down.try_clone().unwrap(), up.try_clone().unwrap()), (up, down)] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        CutProxy { url, conns, stop }
    }

    /// Closes every connection made so far (new ones still work).
    pub fn cut(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.cut();
    }
}

/// The bridge double (tools/bridge-double), built once per test process, or
/// `$CURSOR_SDK_DOUBLE_BIN` (`make tsan` builds it apart, without the sanitizer).
pub fn double_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("CURSOR_SDK_DOUBLE_BIN").filter(|b| !b.is_empty()) {
            return PathBuf::from(bin);
        }
        let out = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "cursor-sdk-bridge-double", "--message-format=json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run cargo to build the bridge double");
        assert!(out.status.success(), "building the bridge double failed");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("executable").and_then(|e| e.as_str()).map(PathBuf::from))
            .find(|p| p.file_name().is_some_and(|n| n == "cursor-sdk-bridge-double"))
            .expect("cargo reported no executable for the bridge double")
    })
    .clone()
}

impl Sandbox {
    /// Options for the bridge double, with its keepalive interval shortened.
    pub fn double_options(&self) -> ClientOptions {
        let mut o = self.options();
        o.bridge_path = Some(double_bin());
        o.bridge_env
            .insert("CURSOR_SDK_DOUBLE_KEEPALIVE_MS".into(), "100".into());
        o
    }

    pub fn double_client(&self) -> Client {
        Client::new(self.double_options()).unwrap()
    }
}

/// This process's resident set size in KiB (Linux).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Number of threads in this process (Linux).
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The event sequence of the double's `normal` scenario, as `describe` writes each event.
pub const NORMAL: &[&str] = &[
    "msg:system",
    "msg:status:RUNNING",
    "msg:thinking",
    "msg:assistant",
    "msg:assistant",
    "msg:assistant",
    "msg:assistant",
    "msg:assistant",
    "msg:tool_call:running",
    "msg:tool_call:completed",
    "msg:usage",
    "msg:status:FINISHED",
    "result:result",
];

/// `kind:type[:status]` of an event: its place in a scenario's sequence.
pub fn describe(e: &Event) -> String {
    let kind = match e.kind {
        EventKind::Message => "msg",
        EventKind::Delta => "delta",
        EventKind::Step => "step",
        EventKind::Result => "result",
    };
    match e.payload().get("status").and_then(|s| s.as_str()) {
        Some(s) if e.kind != EventKind::Result => format!("{kind}:{}:{s}", e.r#type()),
        _ => format!("{kind}:{}", e.r#type()),
    }
}
