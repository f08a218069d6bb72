//! The soak (`make soak`, ignored by `cargo test`): `SOAK_MINUTES` (default 30) of the mixed
//! workload of tests/mixed on several threads, with the bridge double SIGKILLed every
//! `KILL_EVERY` (the next call relaunches it) and the client freed and made anew every
//! `CLIENT_LIFE`. Every 10 s a sample of this process (RSS, threads, fds, bridge children) goes
//! to `$SOAK_DIR/soak.csv` (scripts/soak.sh plots it). The verdict: no failure that a kill does
//! not explain, RSS/threads/fds flat after warm-up, and back to the baseline with no bridge left
//! once the last client is freed.

mod common;
mod mixed;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, rss_kib, thread_count, Sandbox};
use cursor_sdk::ErrorKind;
use mixed::{Counters, Failure, Worker};

/// The system allocator, counting live heap bytes: a leak shows there apart from the allocator's
/// fragmentation, which RSS includes (glibc keeps per-thread arenas, and threads come and go).
struct Counting;

static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to System unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const WORKERS: usize = 6;
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
const KILL_EVERY: Duration = Duration::from_secs(30);
const CLIENT_LIFE: Duration = Duration::from_secs(120);
/// How long after a kill a new step may still meet the dead bridge.
const KILL_NOTICE: Duration = Duration::from_secs(2);

/// One row of the CSV.
#[derive(Clone, Copy)]
struct Sample {
    elapsed_s: u64,
    rss_kib: u64,
    threads: u64,
    fds: u64,
    runs: u64,
    errors: u64,
    bridges: u64,
    kills: u64,
    restarts: u64,
    heap_kib: u64,
}

impl Sample {
    const HEADER: &str = "elapsed_s,rss_kib,threads,fds,runs_done,errors,bridges_alive,kills,client_restarts,heap_kib";

    fn row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{}",
            self.elapsed_s,
            self.rss_kib,
            self.threads,
            self.fds,
            self.runs,
            self.errors,
            self.bridges,
            self.kills,
            self.restarts,
            self.heap_kib
        )
    }
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

/// Processes whose parent is this one (the bridges it launched; zombies included).
fn child_processes() -> u64 {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        // The fields after the parenthesised name: state, ppid, …
        .filter(|stat| stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)) == Some(me.as_str()))
        .count() as u64
}

/// What the driver and its sampler share.
#[derive(Default)]
struct State {
    counters: Arc<Counters>,
    errors: AtomicU64,
    explained: AtomicU64,
    kills: AtomicU64,
    restarts: AtomicU64,
    kill_times: Mutex<Vec<Instant>>,
    error_log: Mutex<Vec<String>>,
    explained_kinds: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl State {
    fn sample(&self, t0: Instant) -> Sample {
        Sample {
            elapsed_s: t0.elapsed().as_secs(),
            rss_kib: rss_kib(),
            threads: thread_count() as u64,
            fds: open_fds(),
            runs: self.counters.runs.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            bridges: child_processes(),
            kills: self.kills.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
            heap_kib: LIVE_BYTES.load(Ordering::Relaxed) / 1024,
        }
    }

    /// A failure is explained when a bridge kill happened since `since` or shortly before it (a
    /// step that starts after a kill meets the dead bridge until the client has noticed; the call
    /// that notices fails, as `src/link.rs` documents), or when it reports the bridge killed by
    /// SIGKILL, which only this driver sends.
    fn failed(&self, since: Instant, f: Failure, t0: Instant) {
        let window = since.checked_sub(KILL_NOTICE).unwrap_or(since);
        let killed = matches!(&f, Failure::Sdk(e)
            if e.kind == ErrorKind::BridgeExited && e.message.contains("killed by signal 9"));
        let explained = killed || self.kill_times.lock().unwrap().iter().any(|k| *k >= window);
        if explained {
            self.explained.fetch_add(1, Ordering::Relaxed);
            let kind = match &f {
                Failure::Sdk(e) => format!("{:?}", e.kind),
                Failure::Check(_) => "check".into(),
            };
            *self.explained_kinds.lock().unwrap().entry(kind).or_default() += 1;
        } else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            let line = format!("{:>6.1} s: {f}", t0.elapsed().as_secs_f64());
            eprintln!("soak: UNEXPLAINED {line}");
            self.error_log.lock().unwrap().push(line);
        }
    }
}

fn minutes() -> f64 {
    match std::env::var("SOAK_MINUTES") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("SOAK_MINUTES={s:?} is not a number of minutes")),
        Err(_) => 30.0,
    }
}

fn out_dir() -> PathBuf {
    let dir = std::env::var_os("SOAK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/soak"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One client's life: workers on it until `until`, the bridge killed every `KILL_EVERY`.
fn client_life(sb: &Sandbox, state: &Arc<State>, until: Instant, seed: u64, t0: Instant) {
    let client = sb.double_client();
    mixed::add_tools(&client);
    let workers: Vec<_> = (0..WORKERS)
        .map(|i| {
            let (c, s) = (client.clone(), state.clone());
            std::thread::spawn(move || {
                let mut w = Worker::new(c, seed * 100 + i as u64, s.counters.clone());
                mixed::loop_until(&mut w, until, |since, f| s.failed(since, f, t0));
            })
        })
        .collect();
    loop {
        let next_kill = Instant::now() + KILL_EVERY;
        if next_kill + Duration::from_secs(5) >= until {
            break;
        }
        std::thread::sleep(KILL_EVERY);
        if let Some(pid) = client.bridge_pid() {
            // Recorded first, so no failure the kill causes can precede its time.
            state.kill_times.lock().unwrap().push(Instant::now());
            // SAFETY: plain kill(2) of our own child.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            state.kills.fetch_add(1, Ordering::Relaxed);
        }
    }
    for w in workers {
        w.join().expect("a soak worker panicked");
    }
    drop(client);
    state.restarts.fetch_add(1, Ordering::Relaxed);
}

/// The largest `f` in `s`.
/// The median of a window: each sample catches whatever runs are in flight at that instant, so a
/// window's peak swings with the workload while its median moves only when memory really grows.
fn median_of(s: &[Sample], f: impl Fn(&Sample) -> u64) -> u64 {
    let mut v: Vec<u64> = s.iter().map(f).collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[test]
#[ignore = "30 minutes: run with `make soak`"]
fn soak() {
    let total = Duration::from_secs_f64(minutes() * 60.0);
    let dir = out_dir();
    let sb = Sandbox::new();
    // Open before the baseline is taken: it stays open to the end.
    let mut csv = std::fs::File::create(dir.join("soak.csv")).unwrap();
    writeln!(csv, "{}", Sample::HEADER).unwrap();
    // The first launch starts the process-wide spawner thread, which stays by design.
    sb.double_client().ping().unwrap();
    let (threads0, fds0) = (thread_count() as u64, open_fds());
    let state = Arc::new(State::default());
    let t0 = Instant::now();
    let end = t0 + total;

    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (state, samples, stop) = (state.clone(), samples.clone(), stop.clone());
        let mut csv = csv.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    let s = state.sample(t0);
                    writeln!(csv, "{}", s.row()).unwrap();
                    eprintln!("soak: {}", s.row());
                    samples.lock().unwrap().push(s);
                    next += SAMPLE_EVERY;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    let mut life = 0;
    while Instant::now() + Duration::from_secs(10) < end {
        life += 1;
        let until = (Instant::now() + CLIENT_LIFE).min(end);
        client_life(&sb, &state, until, life, t0);
    }
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();

    // After the last free: back to the baseline, no bridge left.
    let settled = eventually(Duration::from_secs(10), || {
        thread_count() as u64 <= threads0 && open_fds() <= fds0 && child_processes() == 0
    });
    let last = state.sample(t0);
    writeln!(csv, "{}", last.row()).unwrap();
    drop(csv);

    let samples = samples.lock().unwrap().clone();
    let c = &state.counters;
    let mut verdict = Vec::new();
    let mut report = vec![
        format!(
            "duration: {:.1} min ({} samples)",
            t0.elapsed().as_secs_f64() / 60.0,
            samples.len()
        ),
        format!(
            "runs: {} ({} with tools, {} cancelled), events: {}, management calls: {}",
            c.runs.load(Ordering::Relaxed),
            c.tool_runs.load(Ordering::Relaxed),
            c.cancels.load(Ordering::Relaxed),
            c.events.load(Ordering::Relaxed),
            c.management.load(Ordering::Relaxed)
        ),
        format!(
            "bridge kills: {}, client restarts: {}, failures explained by a kill: {} {:?}, unexplained errors: {}",
            last.kills,
            last.restarts,
            state.explained.load(Ordering::Relaxed),
            state.explained_kinds.lock().unwrap(),
            last.errors
        ),
        format!(
            "baseline: threads {threads0}, fds {fds0}; after the last free: rss {} KiB, heap {} KiB, threads {}, fds {}, bridges {}",
            last.rss_kib, last.heap_kib, last.threads, last.fds, last.bridges
        ),
    ];
    if last.errors > 0 {
        verdict.push(format!(
            "{} unexplained errors:\n{}",
            last.errors,
            state.error_log.lock().unwrap().join("\n")
        ));
    }
    if !settled {
        verdict.push(format!(
            "not back to the baseline after the last free: threads {} (was {threads0}), fds {} (was {fds0}), bridges {}",
            last.threads, last.fds, last.bridges
        ));
    }
    // Flat after warm-up (the first sixth): the median of the last third of the rest may not top
    // that of its first third by more than a small slack (RSS: allocator noise; threads/fds: runs
    // in flight).
    let rest = &samples[samples.len() / 6..];
    let third = rest.len() / 3;
    if third >= 2 {
        let (first, tail) = (&rest[..third], &rest[rest.len() - third..]);
        for (name, f, slack, plus) in [
            ("rss_kib", (|s: &Sample| s.rss_kib) as fn(&Sample) -> u64, 0.10, 8192),
            ("heap_kib", |s: &Sample| s.heap_kib, 0.10, 2048),
            ("threads", |s: &Sample| s.threads, 0.25, 4),
            ("fds", |s: &Sample| s.fds, 0.25, 4),
        ] {
            let (a, b) = (median_of(first, f), median_of(tail, f));
            let limit = a + (a as f64 * slack) as u64 + plus;
            report.push(format!(
                "{name}: median {a} early after warm-up, {b} in the last third (limit {limit})"
            ));
            if b > limit {
                verdict.push(format!("{name} grew: {a} -> {b} (limit {limit})"));
            }
        }
    } else {
        verdict.push(format!("too short to judge flatness: {} samples", samples.len()));
    }
    let pass = verdict.is_empty();
    report.push(format!("verdict: {}", if pass { "PASS" } else { "FAIL" }));
    report.extend(verdict.iter().cloned());
    let text = report.join("\n") + "\n";
    std::fs::write(dir.join("summary.txt"), &text).unwrap();
    eprint!("{text}");
    assert!(pass, "soak failed:\n{}", verdict.join("\n"));
}
