//! 16 threads on one client for `CURSOR_SDK_CONCURRENCY_SECS` (default 20): mixed runs, tool
//! calls answered now and later, cancels and management calls, every event checked once and in
//! order (tests/mixed). `make tsan` runs this under ThreadSanitizer.

mod common;
mod mixed;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, thread_count, Sandbox};
use mixed::{Counters, Worker};

const THREADS: usize = 16;

fn seconds() -> u64 {
    match std::env::var("CURSOR_SDK_CONCURRENCY_SECS") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("CURSOR_SDK_CONCURRENCY_SECS={s:?} is not a number of seconds")),
        Err(_) => 20,
    }
}

#[test]
fn sixteen_threads_share_one_client_and_every_event_arrives_once_in_order() {
    let secs = seconds();
    let sb = Sandbox::new();
    // The first launch starts the process-wide spawner thread, which stays by design.
    sb.double_client().ping().unwrap();
    let before = thread_count();
    let client = sb.double_client();
    mixed::add_tools(&client);
    let counters = Arc::new(Counters::default());
    let deadline = Instant::now() + Duration::from_secs(secs);
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (c, n) = (client.clone(), counters.clone());
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                let mut w = Worker::new(c, i as u64 + 1, n);
                mixed::loop_until(&mut w, deadline, |_, f| failures.push(format!("thread {i}: {f}")));
                failures
            })
        })
        .collect();
    let failures: Vec<String> = workers
        .into_iter()
        .flat_map(|t| t.join().expect("a worker panicked"))
        .collect();
    let runs = counters.runs.load(Ordering::Relaxed);
    eprintln!(
        "concurrency: {secs} s, {THREADS} threads: {runs} runs ({} with tools, {} cancelled), {} events, {} management calls, {} failures",
        counters.tool_runs.load(Ordering::Relaxed),
        counters.cancels.load(Ordering::Relaxed),
        counters.events.load(Ordering::Relaxed),
        counters.management.load(Ordering::Relaxed),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(runs >= THREADS as u64, "only {runs} runs in {secs} s");
    drop(client);
    assert!(
        eventually(Duration::from_secs(10), || thread_count() <= before),
        "threads leaked: {} before, {} after the client was dropped",
        before,
        thread_count()
    );
}
