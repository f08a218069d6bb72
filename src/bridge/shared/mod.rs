//! Shared warm bridges (opt-in): one bridge per user and configuration, started by the first
//! client that asks and reused by every later one, from any process of the same user, until it
//! has had no client for an idle period.
//!
//! Files, all in the per-user runtime directory (`private_dir.rs`: ours, 0700, checked with
//! lstat before anything in it is read), named after a key that hashes everything that changes
//! what the bridge does (launcher path and its size/mtime/inode, workspace and current
//! directory, arguments such as `--verbose` and `--local-store`, and the environment we add:
//! `bridgeEnv`, the API key, the client language). The rest of the environment is the first
//! client's, as it is for any process it starts:
//! - `<key>.lock`: `flock`ed exclusively by a client while it checks, attaches or starts, so two
//!   racing clients end up on one bridge, and by the keeper while it decides to exit;
//! - `<key>.json` (0600): the registration: url, token, pids, the instance's nonce. A file that
//!   is not a regular 0600 file of ours, does not parse, names a dead keeper or bridge, or whose
//!   bridge refuses its token, is never used: it is removed and replaced by a new instance
//!   (whose bridge, if it is alive, is left alone: without its lease it idles out);
//! - `<key>.<nonce>.lease`: clients hold a shared `flock` on it while they use the bridge; the
//!   kernel drops it when their process ends, however it ends;
//! - `<key>.<nonce>.log`: the bridge's stderr (the ready line, and its RPC trace with
//!   `verbose`); `<key>.<nonce>.tokendir`: which token directory to remove at the end.
//!
//! The bridge is started and owned by a keeper process (`keeper.rs`) that belongs to no client,
//! so it outlives them all (the point of sharing; the non-shared bridge is still tied to its host
//! by the lifeline). The keeper stops the bridge after `idle` with no lease, and removes the
//! instance's files.

mod keeper;
mod private_dir;

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::process::pid_alive_in_group;
use super::ready::{parse_ready_line, redacted_ready_line, ReadyInfo};
use super::stderr::{read_token, tail_for_message};
use super::token_dir::TokenDir;
use super::{command_line, LaunchOptions, TAIL_IN_MESSAGE};
use crate::error::{Error, ErrorKind, Result};
use crate::transport::{Idempotency, Transport, TransportOptions};

pub use private_dir::runtime_dir;

/// How long a shared bridge lives on with no client, unless the client says otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(600);
/// The environment variable that turns sharing on when the client option is absent.
pub const ENV_SHARED_BRIDGE: &str = "CURSOR_SDK_SHARED_BRIDGE";
/// How long an attaching client gives the registered bridge to answer `Ping`.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
const REGISTRATION_VERSION: u32 = 1;

/// What a client needs to use a shared bridge, and its lease: while this value lives, the
/// bridge stays up. Dropping it releases the lease (never stops the bridge).
pub struct SharedBridge {
    reg: Registration,
    launched: bool,
    _lease: OwnedFd,
}

impl std::fmt::Debug for SharedBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBridge")
            .field("url", &self.reg.url)
            .field("pid", &self.reg.bridge_pid)
            .field("keeper", &self.reg.keeper_pid)
            .field("launched", &self.launched)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Registration {
    version: u32,
    url: String,
    token: String,
    /// Node (the ready line's pid).
    bridge_pid: u32,
    /// The bridge's process group (its first process).
    bridge_group: u32,
    keeper_pid: u32,
    nonce: String,
    started_unix_ms: u64,
    sdk_version: Option<String>,
}

impl SharedBridge {
    /// Attaches to the registered bridge for this configuration, or starts one (kept alive for
    /// `idle` after its last client) and registers it. Returns the transport the attach checked
    /// the bridge with (its connection stays open for the caller's first call).
    pub fn attach_or_launch(
        opts: &LaunchOptions,
        idle: Duration,
        topts: TransportOptions,
    ) -> Result<(SharedBridge, Transport)> {
        let dir = runtime_dir()?;
        let cl = command_line(opts)?;
        // The bridge runs in the launching process's directory: relative paths in its arguments
        // mean something else elsewhere.
        let cwd = std::env::current_dir().unwrap_or_default();
        let key = config_key(&cl.launcher, &[&cl.workspace, &cwd], &cl.args, &cl.env)?;
        let paths = Paths::new(&dir, &key);
        let _lock = lock_key(&paths.lock, opts.startup_timeout + Duration::from_secs(10))?;
        if let Some(reg) = read_registration(&paths.registration) {
            match attach(&paths, &reg, topts.clone()) {
                Ok((lease, transport)) => {
                    let bridge = SharedBridge {
                        reg,
                        launched: false,
                        _lease: lease,
                    };
                    return Ok((bridge, transport));
                }
                Err(why) => {
                    crate::log::emit(
                        crate::log::Level::Info,
                        &format!("shared bridge: replacing a stale registration ({why})"),
                    );
                    let _ = std::fs::remove_file(&paths.registration);
                }
            }
        }
        let bridge = launch(opts, &paths, cl, idle)?;
        let transport = Transport::new(bridge.base_url(), bridge.token(), topts)?;
        Ok((bridge, transport))
    }

    pub fn base_url(&self) -> &str {
        &self.reg.url
    }

    /// The bearer token. A secret: it grants full control of the bridge.
    pub fn token(&self) -> &str {
        &self.reg.token
    }

    /// Node's pid.
    pub fn pid(&self) -> u32 {
        self.reg.bridge_pid
    }

    /// The keeper's pid (SIGTERM stops the bridge at once and removes its registration).
    pub fn keeper_pid(&self) -> u32 {
        self.reg.keeper_pid
    }

    /// Whether this client started the bridge (false: it attached to a running one).
    pub fn launched_here(&self) -> bool {
        self.launched
    }

    pub fn sdk_version(&self) -> Option<&str> {
        self.reg.sdk_version.as_deref()
    }

    /// Whether the keeper and node still run (a zombie counts as gone).
    pub fn is_alive(&self) -> bool {
        self.reg.alive()
    }
}

impl Registration {
    fn alive(&self) -> bool {
        let (k, g, b) = (
            self.keeper_pid as libc::pid_t,
            self.bridge_group as libc::pid_t,
            self.bridge_pid as libc::pid_t,
        );
        pid_alive_in_group(k, k) && pid_alive_in_group(b, g)
    }
}

struct Paths {
    dir: PathBuf,
    key: String,
    lock: PathBuf,
    registration: PathBuf,
}

impl Paths {
    fn new(dir: &Path, key: &str) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            key: key.to_string(),
            lock: dir.join(format!("{key}.lock")),
            registration: dir.join(format!("{key}.json")),
        }
    }

    /// A file of one instance (`<key>.<nonce>.<ext>`).
    fn instance(&self, nonce: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{nonce}.{ext}", self.key))
    }
}

/// Hex digest of the configuration. `DefaultHasher::new()` has fixed keys: the same in every
/// process built with the same Rust; a different build just does not share.
fn config_key(launcher: &Path, dirs: &[&Path], args: &[OsString], env: &[(OsString, OsString)]) -> Result<String> {
    let launcher = std::fs::canonicalize(launcher).map_err(|e| {
        Error::new(
            ErrorKind::BridgeStartFailed,
            format!("cannot resolve the bridge {}: {e}", launcher.display()),
        )
    })?;
    let meta = std::fs::metadata(&launcher).map_err(|e| Error::new(ErrorKind::BridgeStartFailed, e.to_string()))?;
    let dirs: Vec<PathBuf> = dirs
        .iter()
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()))
        .collect();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        REGISTRATION_VERSION,
        &launcher,
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino(),
    )
        .hash(&mut h);
    (&dirs, args, env).hash(&mut h);
    let a = h.finish();
    "second half".hash(&mut h);
    Ok(format!("{a:016x}{:016x}", h.finish()))
}

/// Holds the key's lock until dropped.
fn lock_key(path: &Path, limit: Duration) -> Result<File> {
    let file = open_own(path, true)?;
    let deadline = Instant::now() + limit;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::new(
                ErrorKind::BridgeStartFailed,
                format!("shared bridge: cannot lock {}: {e}", path.display()),
            ));
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                ErrorKind::Timeout,
                format!("shared bridge: {} stayed locked for {limit:.0?}", path.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Opens (creating with 0600 if `create`) a file of ours in the runtime directory, never
/// through a symlink; refuses one that is not a regular file of ours.
fn open_own(path: &Path, create: bool) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            Error::new(
                ErrorKind::BridgeStartFailed,
                format!("shared bridge: {}: {e}", path.display()),
            )
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Error::new(ErrorKind::BridgeStartFailed, e.to_string()))?;
    if !private_dir::trusted_file(&meta, None) {
        return Err(Error::new(
            ErrorKind::BridgeStartFailed,
            format!("shared bridge: {} is not a regular file of ours", path.display()),
        ));
    }
    Ok(file)
}

/// The registration if it is there and trustworthy; an untrustworthy one is removed.
fn read_registration(path: &Path) -> Option<Registration> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let untrusted = |why: &str| {
        crate::log::emit(
            crate::log::Level::Warn,
            &format!("shared bridge: ignoring and replacing {}: {why}", path.display()),
        );
        let _ = std::fs::remove_file(path);
        None
    };
    if !private_dir::trusted_file(&meta, Some(0o600)) {
        return untrusted("not a regular 0600 file of ours");
    }
    let mut text = String::new();
    let read = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .and_then(|f| {
            let same = f.metadata()?;
            if same.ino() != meta.ino() || same.dev() != meta.dev() {
                return Err(std::io::Error::other("replaced while being read"));
            }
            f.take(64 * 1024).read_to_string(&mut text)
        });
    if let Err(e) = read {
        return untrusted(&e.to_string());
    }
    match serde_json::from_str::<Registration>(&text) {
        Ok(r) if r.version == REGISTRATION_VERSION => Some(r),
        Ok(r) => untrusted(&format!("version {}", r.version)),
        Err(e) => untrusted(&format!("malformed: {e}")),
    }
}

/// Takes a lease on the registered bridge if it is alive and accepts the token.
fn attach(
    paths: &Paths,
    reg: &Registration,
    topts: TransportOptions,
) -> std::result::Result<(OwnedFd, Transport), String> {
    if !reg.alive() {
        return Err(format!(
            "keeper {} or bridge {} is gone",
            reg.keeper_pid, reg.bridge_pid
        ));
    }
    if reg.nonce.is_empty() || !reg.nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("bad nonce".into());
    }
    let lease = open_own(&paths.instance(&reg.nonce, "lease"), false).map_err(|e| e.message)?;
    take_shared(&lease).map_err(|e| format!("cannot take a lease: {e}"))?;
    let transport = Transport::new(&reg.url, &reg.token, topts).map_err(|e| e.message)?;
    transport
        .unary::<_, crate::proto::PingResponse>(
            crate::link::CONTROL,
            "Ping",
            &crate::proto::PingRequest {},
            Idempotency::Idempotent,
            Some(Instant::now() + PING_TIMEOUT),
            None,
        )
        .map_err(|e| match e.kind {
            ErrorKind::Auth => "the bridge refuses the registered token".to_string(),
            _ => format!("the bridge does not answer: {}", e.message),
        })?;
    Ok((lease.into(), transport))
}

/// A shared lock on the lease. The keeper's probe holds an exclusive one for an instant:
/// retried briefly.
fn take_shared(lease: &File) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(lease.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) || Instant::now() >= deadline {
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn cstring(bytes: &[u8]) -> Result<CString> {
    CString::new(bytes).map_err(|_| Error::invalid_argument("shared bridge: an argument or variable contains NUL"))
}

/// Starts a keeper and its bridge, waits for the ready line, registers the instance.
fn launch(opts: &LaunchOptions, paths: &Paths, cl: super::CommandLine, idle: Duration) -> Result<SharedBridge> {
    let start_err =
        |what: &str, e: std::io::Error| Error::new(ErrorKind::BridgeStartFailed, format!("shared bridge: {what}: {e}"));
    let (program, args) = super::launcher::command(&cl.launcher, &cl.args);
    let mut argv = vec![cstring(program.as_os_str().as_bytes())?];
    for a in &args {
        argv.push(cstring(a.as_bytes())?);
    }
    // The host's environment, then ours on top (as Command does for a non-shared launch).
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !cl.env.iter().any(|(o, _)| o == k))
        .collect();
    vars.extend(cl.env.iter().cloned());
    let envp = vars
        .iter()
        .map(|(k, v)| cstring(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<Result<Vec<_>>>()?;

    let nonce = crate::callback::random_id()?;
    let lease_path = paths.instance(&nonce, "lease");
    let log_path = paths.instance(&nonce, "log");
    let note_path = paths.instance(&nonce, "tokendir");
    let create = |p: &Path| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(p)
            .map_err(|e| start_err(&format!("cannot create {}", p.display()), e))
    };
    let lease = create(&lease_path)?;
    take_shared(&lease).map_err(|e| start_err("cannot take a lease", e))?;
    let log = create(&log_path)?;
    let c = |p: &Path| cstring(p.as_os_str().as_bytes());
    let spec = keeper::Spec {
        program: c(&program)?,
        argv,
        envp,
        log: log.into(),
        lock_path: c(&paths.lock)?,
        lease_path: c(&lease_path)?,
        registration_path: c(&paths.registration)?,
        token_dir_note: c(&note_path)?,
        log_path: c(&log_path)?,
        needle: format!("\"nonce\":\"{nonce}\"").into_bytes(),
        idle,
    };
    let spawned_at = SystemTime::now();
    let started = keeper::spawn(&spec).map_err(|e| {
        let _ = std::fs::remove_file(&lease_path);
        let _ = std::fs::remove_file(&log_path);
        start_err("cannot start the keeper", e)
    })?;
    drop(spec);
    // From here on the keeper removes the instance's files when it ends.
    let fail = |what: String| {
        // SAFETY: SIGTERM to the keeper we just started: it stops the bridge and cleans up.
        unsafe { libc::kill(started.keeper, libc::SIGTERM) };
        Error::new(
            ErrorKind::BridgeStartFailed,
            format!(
                "{what} (shared bridge: {}); stderr:\n{}",
                cl.launcher.display(),
                tail_for_message(&log_text(&log_path), TAIL_IN_MESSAGE)
            ),
        )
    };
    let ready = wait_ready(&log_path, &started.status, opts.startup_timeout).map_err(fail)?;
    let token = read_token(&ready).map_err(|e| fail(e.message))?;
    if let Some(dir) = TokenDir::verify(&ready.auth_token_file, &token, spawned_at) {
        let _ = create(&note_path).and_then(|mut f| {
            f.write_all(dir.path().as_os_str().as_bytes())
                .map_err(|e| start_err("token note", e))
        });
    }
    let reg = Registration {
        version: REGISTRATION_VERSION,
        url: ready.base_url(),
        token,
        bridge_pid: ready.pid,
        bridge_group: started.group as u32,
        keeper_pid: started.keeper as u32,
        nonce: nonce.clone(),
        started_unix_ms: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        sdk_version: cl.sdk_version,
    };
    write_registration(paths, &nonce, &reg).map_err(|e| fail(e.message))?;
    Ok(SharedBridge {
        reg,
        launched: true,
        _lease: lease.into(),
    })
}

/// Written to a temporary name and renamed: a reader sees the old file or the whole new one.
fn write_registration(paths: &Paths, nonce: &str, reg: &Registration) -> Result<()> {
    let tmp = paths.instance(nonce, "tmp");
    let json = serde_json::to_vec(reg).map_err(|e| Error::internal(e.to_string()))?;
    let io = |e: std::io::Error| Error::new(ErrorKind::BridgeStartFailed, format!("cannot register: {e}"));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(io)?;
    let written = f
        .write_all(&json)
        .and_then(|_| std::fs::rename(&tmp, &paths.registration));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

/// The bridge's stderr so far, ready line redacted.
fn log_text(path: &Path) -> String {
    let mut raw = Vec::new();
    let _ = File::open(path).and_then(|f| f.take(1 << 20).read_to_end(&mut raw));
    String::from_utf8_lossy(&raw)
        .lines()
        .map(redacted_ready_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls the log for the ready line until `limit`, or until the keeper is gone (`status` EOF).
fn wait_ready(log_path: &Path, status: &OwnedFd, limit: Duration) -> std::result::Result<ReadyInfo, String> {
    let deadline = Instant::now() + limit;
    loop {
        let mut raw = Vec::new();
        let _ = File::open(log_path).and_then(|f| f.take(1 << 20).read_to_end(&mut raw));
        let text = String::from_utf8_lossy(&raw);
        // Only complete lines: the ready line may be half written.
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        for line in complete.lines() {
            match parse_ready_line(line) {
                Some(Ok(ready)) => return Ok(ready),
                Some(Err(e)) => return Err(e.message),
                None => {}
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(format!(
                "cursor-sdk-bridge start-up timed out after {limit:.1?} without a ready line"
            ));
        }
        let mut pfd = libc::pollfd {
            fd: status.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let wait = (deadline - now).min(Duration::from_millis(5));
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as libc::c_int) };
        if n > 0 && pfd.revents != 0 {
            let mut b = [0u8; 1];
            // SAFETY: reading one byte into a local buffer.
            if unsafe { libc::read(status.as_raw_fd(), b.as_mut_ptr().cast(), 1) } == 0 {
                // One last look: the line may have come just before the exit.
                if let Some(Ok(ready)) = log_text(log_path).lines().find_map(parse_ready_line) {
                    return Ok(ready);
                }
                return Err("cursor-sdk-bridge exited before it was ready".to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_the_configuration() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bridge");
        std::fs::write(&bin, "x").unwrap();
        let args: Vec<OsString> = vec!["--workspace".into(), "/w".into()];
        let env: Vec<(OsString, OsString)> = vec![("A".into(), "1".into())];
        let ws = [d.path()];
        let k = config_key(&bin, &ws, &args, &env).unwrap();
        assert_eq!(k.len(), 32);
        assert_eq!(k, config_key(&bin, &ws, &args, &env).unwrap());
        assert_ne!(k, config_key(&bin, &ws, &args[..1], &env).unwrap());
        assert_ne!(k, config_key(&bin, &ws, &[], &env).unwrap());
        assert_ne!(k, config_key(&bin, &ws, &args, &[]).unwrap());
        assert_ne!(k, config_key(&bin, &[&d.path().join("..")], &args, &env).unwrap());
        std::fs::write(&bin, "xy").unwrap();
        assert_ne!(k, config_key(&bin, &ws, &args, &env).unwrap());
    }
}
