//! Memory stays bounded for long streams and for consumers that stop reading. Its own test
//! binary (one test) so the process RSS measures only this.

mod common;

use std::time::Duration;

use common::{rss_kib, Sandbox};
use cursor_sdk::{Next, RunStatus};

#[test]
fn long_runs_and_stalled_consumers_keep_memory_bounded() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();

    // Warm up (allocator, connection pool) so the baseline is honest.
    agent.send_text("scenario:long:1000").unwrap().wait().unwrap();
    let base = rss_kib();

    // 100 000 events, consumed one by one: peak growth bounded.
    let run = agent.send_text("scenario:long:100000").unwrap();
    let (mut n, mut peak) = (0u64, base);
    for ev in run.events() {
        ev.unwrap();
        n += 1;
        if n % 5000 == 0 {
            peak = peak.max(rss_kib());
        }
    }
    assert_eq!(n, 100_000 + 5, "system, status, 100k assistant, usage, status, result");
    assert_eq!(run.wait().unwrap().status, RunStatus::Finished);
    let growth_mib = (peak.saturating_sub(base)) / 1024;
    println!("100k events: RSS {base} KiB -> peak {peak} KiB (+{growth_mib} MiB)");
    assert!(growth_mib < 20, "RSS grew {growth_mib} MiB over a 100k-event run");

    // A consumer that stops: the bounded queue and TCP backpressure hold the stream.
    let stalled = agent.send_text("scenario:long:200000").unwrap();
    for _ in 0..10 {
        assert!(matches!(
            stalled.next_event(Some(Duration::from_secs(5))).unwrap(),
            Next::Event(_)
        ));
    }
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib();
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kib();
    println!("stalled consumer: RSS {before} KiB -> {after} KiB");
    assert!(
        after < before + 2048,
        "RSS grew from {before} to {after} KiB while nobody read"
    );
    stalled.cancel();
    drop(stalled);
}
