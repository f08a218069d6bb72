//! The supervisor: a tiny `/bin/sh` script that is our direct child, leads its own process group,
//! and makes sure the bridge never outlives us.
//!
//! Why: `bin/cursor-sdk-bridge` is `sh` running node *without* exec, and node ignores both stdin
//! EOF and parent death (bridge-behavior §1c), so a host killed by SIGKILL would leave node
//! serving forever. The supervisor's stdin is the lifeline (see `lifeline.rs`); a watcher
//! subshell blocks reading it, and on EOF TERMs the group, waits up to 1 s, removes the token
//! directory we told it about (its `auth-token` by name, then `rmdir`: never recursively), and
//! KILLs the group. When the bridge exits by itself the
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
/// - The directory was verified before we named it (`token_dir.rs`); the watcher still checks it
///   is ours and not a symlink, and `rmdir` leaves it if anything else appeared in it.
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
  if [ -n "$d" ] && [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ]; then
    rm -f -- "$d/auth-token"; rmdir -- "$d" 2>/dev/null
  fi
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

/// The supervisor starts with an empty signal mask and default dispositions, whatever the
/// spawning thread had (see `signals.rs`), and none of the host's other descriptors (`fds.rs`).
#[cfg(not(target_os = "linux"))]
fn spawn_command(mut cmd: Command) -> std::io::Result<Child> {
    // SAFETY: reset_for_exec and cloexec_inherited are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            super::fds::cloexec_inherited();
            super::signals::reset_for_exec()
        })
    };
    cmd.spawn()
}

/// On Linux the supervisor also gets PR_SET_PDEATHSIG. That signal fires when the *thread* that
/// forked the child exits, not the process, so the fork happens on one long-lived spawner thread
/// that never exits: a user thread that creates a client and ends must not kill the bridge.
/// The spawner starts with every signal blocked, and the supervisor with an empty mask and
/// default dispositions (see `signals.rs`) and none of the host's other descriptors (`fds.rs`).
#[cfg(target_os = "linux")]
fn spawn_command(mut cmd: Command) -> std::io::Result<Child> {
    let (reply_tx, reply_rx) = std::sync::mpsc::channel();
    let job: Job = Box::new(move || {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (close_range/fcntl, sigaction, sigprocmask, prctl,
        // getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                super::fds::cloexec_inherited();
                super::signals::reset_for_exec()?;
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
    spawner()?
        .send(job)
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    reply_rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone")))
}

#[cfg(target_os = "linux")]
type Job = Box<dyn FnOnce() + Send>;

/// The spawner thread's queue, started on first use in each process: a forked child of the host
/// inherits the parent's queue but not its thread, and would wait forever for a reply.
#[cfg(target_os = "linux")]
fn spawner() -> std::io::Result<std::sync::mpsc::Sender<Job>> {
    use parking_lot::Mutex;
    use std::time::Duration;

    /// (the process the thread belongs to, its queue)
    static SPAWNER: Mutex<Option<(libc::pid_t, std::sync::mpsc::Sender<Job>)>> = Mutex::new(None);

    // Held only for a moment, except in a child forked while another thread held it, where it
    // stays held forever: bounded, so that case is an error rather than a hang.
    let mut guard = SPAWNER.try_lock_for(Duration::from_secs(2)).ok_or_else(|| {
        std::io::Error::other("the spawner is locked (the process was forked while starting a bridge)")
    })?;
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    match guard.take() {
        Some((pid, tx)) if pid == me => {
            *guard = Some((pid, tx.clone()));
            return Ok(tx);
        }
        // The queue of the process we were forked from: its channel state is not ours to touch.
        Some(inherited) => std::mem::forget(inherited),
        None => {}
    }
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let builder = std::thread::Builder::new().name("cursor-sdk-bridge-spawner".into());
    super::signals::with_all_blocked(|| {
        builder.spawn(move || {
            for job in rx {
                job();
            }
        })
    })
    .map_err(|e| std::io::Error::other(format!("cannot start the spawner thread: {e}")))?;
    *guard = Some((me, tx.clone()));
    Ok(tx)
}
