//! Spawning and supervising a local `cursor-sdk-bridge` (managed mode).
//!
//! [`ManagedBridge::launch`] finds the launcher ([`locate`]), starts it under a tiny `sh`
//! supervisor (see `supervisor.rs` for why), reads the ready line from stderr, reads the token,
//! and from then on drains stderr, notices the bridge's death, and stops it within a bounded time
//! (explicitly, on drop, or at process exit). If the host dies, even by SIGKILL, the supervisor
//! takes the bridge down.
//!
//! A bridge belongs to the process that launched it. In a forked child of that process the
//! inherited handle is inert: stopping or dropping it, and the child's exit, leave the parent's
//! bridge alone, and [`ManagedBridge::owned_by_this_process`] lets callers refuse to use it.
//!
//! The opt-in shared bridge ([`shared`]) is the exception by design: it belongs to no client
//! and outlives them, until it has had none for an idle period.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};

#[cfg(unix)]
mod fds;
#[cfg(unix)]
mod launcher;
#[cfg(unix)]
mod lifeline;
mod locate;
#[cfg(unix)]
mod process;
mod ready;
#[cfg(unix)]
pub mod shared;
#[cfg(unix)]
mod signals;
#[cfg_attr(not(unix), allow(dead_code))]
mod stderr;
#[cfg(unix)]
mod supervisor;
#[cfg(unix)]
mod token_dir;

pub use locate::{
    check_manifest, locate, locate_with, manifest_of, Manifest, BRIDGE_FILE_NAME, CACHE_RELATIVE_BIN,
    DEFAULT_CACHE_DIR, ENV_BRIDGE_BIN, ENV_BRIDGE_CACHE, PROTOCOL,
};
pub use ready::{parse_ready_line, ReadyInfo, READY_PREFIX};
pub use stderr::{LineSink, TAIL_BYTES};

/// The default time allowed from spawn to the ready line (the real bridge needs ~0.5–1 s).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How to start a managed bridge.
#[derive(Clone)]
pub struct LaunchOptions {
    /// Explicit launcher path (highest priority in [`locate`]).
    pub bridge_path: Option<PathBuf>,
    /// `--workspace`; default: the current directory.
    pub workspace: Option<PathBuf>,
    /// Put in the child's `CURSOR_API_KEY` only when `Some` (otherwise the inherited env stands).
    pub api_key: Option<String>,
    /// Forward `--verbose` (the bridge then logs every request on stderr).
    pub verbose: bool,
    pub startup_timeout: Duration,
    /// Extra CLI arguments, appended after ours (e.g. `--local-store …`).
    pub args: Vec<OsString>,
    /// Extra environment for the child, applied last (so it can override ours).
    pub env: Vec<(OsString, OsString)>,
    /// `CURSOR_SDK_CLIENT_LANGUAGE`.
    pub client_language: String,
    /// Receives every stderr line after the ready line (token-free), on the drain thread.
    /// It must not block for long: the bridge stalls while its stderr pipe is full.
    pub on_stderr_line: Option<LineSink>,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            bridge_path: None,
            workspace: None,
            api_key: None,
            verbose: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            args: Vec::new(),
            env: Vec::new(),
            client_language: "c".to_string(),
            on_stderr_line: None,
        }
    }
}

impl std::fmt::Debug for LaunchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchOptions")
            .field("bridge_path", &self.bridge_path)
            .field("workspace", &self.workspace)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("verbose", &self.verbose)
            .field("startup_timeout", &self.startup_timeout)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("client_language", &self.client_language)
            .field("on_stderr_line", &self.on_stderr_line.is_some())
            .finish()
    }
}

/// How much of the stderr tail goes into an error message.
#[cfg_attr(not(unix), allow(dead_code))]
const TAIL_IN_MESSAGE: usize = 4096;

/// What a launch runs, resolved from [`LaunchOptions`]: the located launcher, the workspace, the
/// full argument list (ours, then the caller's) and the environment additions.
#[cfg(unix)]
pub(crate) struct CommandLine {
    pub launcher: PathBuf,
    pub workspace: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub sdk_version: Option<String>,
}

#[cfg(unix)]
pub(crate) fn command_line(opts: &LaunchOptions) -> Result<CommandLine> {
    let launcher = locate(opts.bridge_path.as_deref())?;
    let workspace = match &opts.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("no workspace given and no current directory: {e}"),
            )
        })?,
    };
    let mut args: Vec<OsString> = vec!["--workspace".into(), workspace.clone().into_os_string()];
    // The release the bridge ships in (its manifest's `sdkVersion`): what it supports.
    let sdk_version = locate::manifest_of(&launcher)
        .ok()
        .flatten()
        .and_then(|m| m.sdk_version);
    if opts.verbose {
        // Bridges before cursor-sdk 1.0.27 refuse to start with --verbose; they just
        // do without its RPC log.
        if crate::compat::accepts_verbose_flag(sdk_version.as_deref()) {
            args.push("--verbose".into());
        } else {
            crate::log::emit(
                crate::log::Level::Info,
                &format!(
                    "bridge from cursor-sdk {} has no --verbose (added in {}); starting it without",
                    sdk_version.as_deref().unwrap_or("?"),
                    crate::compat::VERBOSE_FLAG_SINCE
                ),
            );
        }
    }
    args.extend(opts.args.iter().cloned());
    let mut env: Vec<(OsString, OsString)> =
        vec![("CURSOR_SDK_CLIENT_LANGUAGE".into(), opts.client_language.clone().into())];
    if let Some(key) = &opts.api_key {
        env.push(("CURSOR_API_KEY".into(), key.into()));
    }
    env.extend(opts.env.iter().cloned());
    Ok(CommandLine {
        launcher,
        workspace,
        args,
        env,
        sdk_version,
    })
}

#[cfg(unix)]
pub use managed::ManagedBridge;

#[cfg(unix)]
mod managed {
    use super::process::{describe_status, Process};
    use super::stderr::{tail_for_message, Startup};
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::mpsc::RecvTimeoutError;
    use std::sync::Arc;
    use std::sync::Weak;

    use parking_lot::Mutex;

    /// A running bridge that this process started and owns. `Send + Sync`; stopping is
    /// idempotent and safe from any thread; dropping stops it. In a forked child of the owner
    /// it does nothing to the bridge (see the module doc).
    pub struct ManagedBridge {
        inner: Arc<Inner>,
    }

    struct Inner {
        process: Process,
        ready: ReadyInfo,
        base_url: String,
        token: String,
        sdk_version: Option<String>,
    }

    impl ManagedBridge {
        /// Starts a bridge and waits for its ready line (see [`LaunchOptions`]).
        pub fn launch(opts: &LaunchOptions) -> Result<ManagedBridge> {
            let CommandLine {
                launcher,
                args,
                env,
                sdk_version,
                ..
            } = command_line(opts)?;
            let (program, args) = super::launcher::command(&launcher, &args);
            let (process, startup) = Process::spawn(&launcher, &program, &args, &env, opts.on_stderr_line.clone())?;
            let outcome = startup.recv_timeout(opts.startup_timeout);
            let failure = |process: &Process, what: String| {
                process.terminate(None);
                Error::new(
                    ErrorKind::BridgeStartFailed,
                    format!(
                        "{what} (bridge: {}); stderr:\n{}",
                        process.launcher().display(),
                        tail_for_message(&process.stderr.tail(), TAIL_IN_MESSAGE)
                    ),
                )
            };
            let (ready, token) = match outcome {
                Ok(Startup::Ready(Ok(pair))) => pair,
                Ok(Startup::Ready(Err(e))) => return Err(failure(&process, e.message)),
                Ok(Startup::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let status = process.wait_exit(Duration::from_secs(2));
                    let what = format!(
                        "cursor-sdk-bridge exited before it was ready ({})",
                        describe_status(status)
                    );
                    return Err(failure(&process, what));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let what = format!(
                        "cursor-sdk-bridge start-up timed out after {:.1?} without a ready line",
                        opts.startup_timeout
                    );
                    return Err(failure(&process, what));
                }
            };
            process.announce(ready.pid, &ready.auth_token_file, &token);
            let inner = Arc::new(Inner {
                base_url: ready.base_url(),
                process,
                ready,
                token,
                sdk_version,
            });
            register(&inner);
            Ok(ManagedBridge { inner })
        }

        /// `http://host:port` (port from the ready line wins over its url; IPv6 in brackets).
        pub fn base_url(&self) -> &str {
            &self.inner.base_url
        }

        /// The bearer token (trimmed content of `authTokenFile`).
        pub fn token(&self) -> &str {
            &self.inner.token
        }

        /// The cursor-sdk release the bridge ships in (`manifest.json` `sdkVersion`), if known.
        pub fn sdk_version(&self) -> Option<&str> {
            self.inner.sdk_version.as_deref()
        }

        pub fn ready(&self) -> &ReadyInfo {
            &self.inner.ready
        }

        /// False once the bridge died or was stopped (checks node itself, not just our child),
        /// and in a forked child (the bridge is not usable from there).
        pub fn is_alive(&self) -> bool {
            self.inner.process.is_alive()
        }

        /// Whether this process launched the bridge: false in a forked child of the launcher,
        /// where the handle is inert and must not be used (its connections, threads and locks
        /// are the parent's).
        pub fn owned_by_this_process(&self) -> bool {
            self.inner.process.owned_here()
        }

        /// `Some(BridgeExited)` once the bridge is gone: its exit status and stderr tail, so a
        /// client can fail its next call fast with a useful message. `Some(Usage)` in a forked
        /// child.
        pub fn exit_error(&self) -> Option<Error> {
            let p = &self.inner.process;
            if !p.owned_here() {
                return Some(Error::new(
                    ErrorKind::Usage,
                    format!(
                        "this bridge belongs to process {}, and this is process {} (a fork of it):                          create a new client here",
                        p.owner(),
                        std::process::id()
                    ),
                ));
            }
            if p.stopped() {
                return Some(Error::new(ErrorKind::BridgeExited, "the bridge was stopped"));
            }
            if p.is_alive() {
                return None;
            }
            // Node died; the supervisor follows within milliseconds: give the status a moment.
            let status = p.wait_exit(Duration::from_millis(200));
            Some(Error::new(
                ErrorKind::BridgeExited,
                format!(
                    "cursor-sdk-bridge exited ({}); stderr:\n{}",
                    describe_status(status),
                    tail_for_message(&p.stderr.tail(), TAIL_IN_MESSAGE)
                ),
            ))
        }

        /// The last [`TAIL_BYTES`] of stderr, token-free (empty in a forked child, whose copy of
        /// it may be locked by a thread that does not exist there).
        pub fn stderr_tail(&self) -> String {
            let p = &self.inner.process;
            if !p.owned_here() {
                return String::new();
            }
            p.stderr.tail()
        }

        /// Stops the bridge: `graceful()` (e.g. sends the Shutdown RPC; true if sent) → brief
        /// wait → SIGTERM node and group → wait → SIGKILL group → reap → remove the token
        /// directory (only the one the bridge made for this launch, and never recursively).
        /// Idempotent, callable from any thread; at most about 6 s (plus whatever `graceful`
        /// itself takes), typically well under 100 ms. In a forked child: returns at once,
        /// without calling `graceful`.
        pub fn stop(&self, graceful: Option<&dyn Fn() -> bool>) {
            self.inner.process.terminate(graceful);
        }

        /// Process group id of the bridge's process tree (the supervisor's pid).
        #[doc(hidden)]
        pub fn process_group(&self) -> u32 {
            self.inner.process.pgid() as u32
        }

        /// Whether the stderr and reaper threads have ended (true after a completed stop).
        #[doc(hidden)]
        pub fn io_threads_finished(&self) -> bool {
            self.inner.process.threads_finished()
        }
    }

    impl Drop for ManagedBridge {
        fn drop(&mut self) {
            self.stop(None);
        }
    }

    impl std::fmt::Debug for ManagedBridge {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("ManagedBridge")
                .field("base_url", &self.inner.base_url)
                .field("pid", &self.inner.ready.pid)
                .field("alive", &self.is_alive())
                .finish_non_exhaustive()
        }
    }

    /// Live bridges, for the exit hook. Weak: the registry never keeps a bridge running.
    static REGISTRY: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());
    /// The process whose bridges REGISTRY lists. A forked child inherits both the registry and
    /// the exit hook; comparing this with getpid() before anything else keeps the child's exit
    /// away from the parent's bridges and from a lock some parent thread may have held.
    static REGISTRY_PID: AtomicI32 = AtomicI32::new(0);

    fn register(inner: &Arc<Inner>) {
        static HOOKED: AtomicBool = AtomicBool::new(false);
        if !HOOKED.swap(true, Ordering::SeqCst) {
            // SAFETY: registering a plain extern "C" fn; failure only loses the exit hook.
            unsafe { libc::atexit(stop_all_at_exit) };
        }
        // Held only for a moment, except in a child forked while another thread held it: there
        // this bridge goes without the exit hook (the lifeline still stops it when we are gone).
        let Some(mut reg) = REGISTRY.try_lock_for(Duration::from_secs(1)) else {
            return;
        };
        let me = std::process::id() as i32;
        if REGISTRY_PID.load(Ordering::SeqCst) != me {
            // The parent's entries (if we are a fork): not ours to stop, nor to drop.
            std::mem::forget(std::mem::take(&mut *reg));
            REGISTRY_PID.store(me, Ordering::SeqCst);
        }
        reg.retain(|w| w.strong_count() > 0);
        reg.push(Arc::downgrade(inner));
    }

    /// At normal process exit, stop every bridge this process launched and still runs (the
    /// lifeline would also fire when the process is gone, but this also removes token
    /// directories and is prompt). In a forked child that launched none: nothing, not even a lock.
    extern "C" fn stop_all_at_exit() {
        if REGISTRY_PID.load(Ordering::SeqCst) != std::process::id() as i32 {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            let live: Vec<Arc<Inner>> = REGISTRY.lock().drain(..).filter_map(|w| w.upgrade()).collect();
            for inner in live {
                inner.process.terminate(None);
            }
        });
    }
}

#[cfg(not(unix))]
pub use unsupported::ManagedBridge;

#[cfg(not(unix))]
mod unsupported {
    use super::*;

    /// Managed mode needs process groups and the `sh` launcher: not available on this platform.
    pub struct ManagedBridge {
        never: std::convert::Infallible,
    }

    impl ManagedBridge {
        pub fn launch(_opts: &LaunchOptions) -> Result<ManagedBridge> {
            Err(Error::new(
                ErrorKind::Unsupported,
                "launching the bridge is not supported on this platform: start cursor-sdk-bridge yourself \
                 and use attach mode (URL + token)",
            ))
        }
        pub fn base_url(&self) -> &str {
            match self.never {}
        }
        pub fn token(&self) -> &str {
            match self.never {}
        }
        pub fn sdk_version(&self) -> Option<&str> {
            match self.never {}
        }
        pub fn ready(&self) -> &ReadyInfo {
            match self.never {}
        }
        pub fn is_alive(&self) -> bool {
            match self.never {}
        }
        pub fn exit_error(&self) -> Option<Error> {
            match self.never {}
        }
        pub fn stderr_tail(&self) -> String {
            match self.never {}
        }
        pub fn stop(&self, _graceful: Option<&dyn Fn() -> bool>) {
            match self.never {}
        }
    }
}

/// Shared bridges need unix processes and locks: refused on this platform.
#[cfg(not(unix))]
pub mod shared {
    use super::LaunchOptions;
    use crate::error::{Error, ErrorKind, Result};
    use std::time::Duration;

    pub const DEFAULT_IDLE: Duration = Duration::from_secs(600);
    pub const ENV_SHARED_BRIDGE: &str = "CURSOR_SDK_SHARED_BRIDGE";

    /// Never made on this platform.
    pub enum SharedBridge {}

    impl SharedBridge {
        pub fn attach_or_launch(
            _opts: &LaunchOptions,
            _idle: Duration,
            _topts: crate::transport::TransportOptions,
        ) -> Result<(SharedBridge, crate::transport::Transport)> {
            Err(Error::new(
                ErrorKind::BridgeStartFailed,
                "the shared bridge is not available on this platform",
            ))
        }
        pub fn base_url(&self) -> &str {
            match *self {}
        }
        pub fn token(&self) -> &str {
            match *self {}
        }
        pub fn pid(&self) -> u32 {
            match *self {}
        }
        pub fn sdk_version(&self) -> Option<&str> {
            match *self {}
        }
        pub fn is_alive(&self) -> bool {
            match *self {}
        }
    }
}
