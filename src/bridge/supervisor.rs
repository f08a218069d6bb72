//! The supervisor: a tiny `/bin/sh` script that is our direct child, leads its own process group,
//! and makes sure the bridge never outlives us.
//!
//! Why: `bin/cursor-sdk-bridge` is `sh` running node *without* exec, and node ignores both stdin
//! EOF and parent death (bridge-behavior §1c), so a host killed by SIGKILL would leave node
//! serving forever. The supervisor's stdin is the lifeline (see `lifeline.rs`); a watcher
//! subshell blocks reading it, and on EOF TERMs the group, waits up to 1 s, removes the token
//! directory we told it about, and KILLs the group. When the bridge exits by itself the
//! supervisor exits with the launcher's status, so reaping the supervisor tells us node is gone.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::error::{Error, ErrorKind, Result};

/// `$0` of the supervisor, as seen in `ps`.
pub const SUPERVISOR_NAME: &str = "cursor-sdk-bridge-supervisor";

/// Positional parameters: `$1` = launcher, the rest = its arguments. The lifeline arrives on fd 0.
/// - In a non-interactive shell, `&` gives a job stdin from /dev/null, so the lifeline is first
///   moved to fd 3 and handed to the watcher explicitly.
/// - The watcher ignores TERM so its own `kill 0` does not stop it halfway.
/// - `pid=`/`dir=` lines on the lifeline name node and the token directory (sent after ready).
/// - HUP is PR_SET_PDEATHSIG's signal (Linux): the host is gone, clean up like the watcher.
pub const SCRIPT: &str = r#"b=$1; shift
exec 3<&0 </dev/null
"$b" "$@" </dev/null >/dev/null 3<&- &
bp=$!
(
  trap '' TERM HUP INT
  np=; d=
  while IFS= read -r l; do
    case $l in pid=*) np=${l#pid=} ;; dir=*) d=${l#dir=} ;; esac
  done
  kill -s TERM 0 2>/dev/null
  i=0
  while [ $i -lt 10 ]; do
    kill -0 "$bp" 2>/dev/null || { [ -n "$np" ] && kill -0 "$np" 2>/dev/null; } || break
    sleep 0.1; i=$((i+1))
  done
  [ -n "$d" ] && rm -rf -- "$d"
  kill -s KILL 0
) <&3 3<&- >/dev/null &
wp=$!
exec 3<&-
trap 'kill -s TERM 0; sleep 1; kill -s KILL 0' HUP
wait "$bp"
st=$?
kill -s KILL "$wp" 2>/dev/null
wait "$wp" 2>/dev/null
exit $st
"#;

/// Starts the supervisor (which starts the launcher). Stdout is discarded, stderr piped.
pub fn spawn(
    launcher: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    lifeline_far_end: OwnedFd,
) -> Result<Child> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg(SUPERVISOR_NAME)
        .arg(launcher)
        .args(args)
        .stdin(Stdio::from(lifeline_far_end))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Own group: we can signal node and everything else at once, and a terminal's Ctrl-C
        // aimed at the host does not hit the bridge behind our back.
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    spawn_command(cmd).map_err(|e| {
        Error::new(
            ErrorKind::BridgeStartFailed,
            format!("cannot start /bin/sh to supervise {}: {e}", launcher.display()),
        )
    })
}

#[cfg(not(target_os = "linux"))]
fn spawn_command(mut cmd: Command) -> std::io::Result<Child> {
    cmd.spawn()
}

/// On Linux the supervisor also gets PR_SET_PDEATHSIG. That signal fires when the *thread* that
/// forked the child exits, not the process, so the fork happens on one long-lived spawner thread
/// that never exits: a user thread that creates a client and ends must not kill the bridge.
#[cfg(target_os = "linux")]
fn spawn_command(mut cmd: Command) -> std::io::Result<Child> {
    use once_cell::sync::Lazy;
    use parking_lot::Mutex;
    use std::sync::mpsc;

    type Job = Box<dyn FnOnce() + Send>;
    static SPAWNER: Lazy<Mutex<Option<mpsc::Sender<Job>>>> = Lazy::new(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let ok = std::thread::Builder::new()
            .name("cursor-sdk-bridge-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .is_ok();
        Mutex::new(ok.then_some(tx))
    });

    let (reply_tx, reply_rx) = mpsc::channel();
    let job: Job = Box::new(move || {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The host died between fork and prctl: the signal will never come.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("host exited during spawn"));
                }
                Ok(())
            });
        }
        let _ = reply_tx.send(cmd.spawn());
    });
    let spawner = SPAWNER.lock().clone();
    match spawner.map(|tx| tx.send(job)) {
        Some(Ok(())) => reply_rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
        // The spawner only fails to exist if the OS refused us a thread: report it.
        Some(Err(_)) => Err(std::io::Error::other("the spawner thread is gone")),
        None => Err(std::io::Error::other("cannot start the spawner thread")),
    }
}
