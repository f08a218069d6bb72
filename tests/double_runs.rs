//! Runs against the bridge double: model turns the offline real bridge cannot produce.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{describe, eventually, thread_count, Sandbox, NORMAL};
use cursor_sdk::{proto, Agent, Client, ErrorKind, Event, EventKind, Next, Run, RunStatus};

fn agent(client: &Client) -> Agent {
    client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

/// `kind:type[:status]` of every event until the end, panicking on a stream error.
fn sequence(run: &Run) -> Vec<String> {
    run.events().map(|e| describe(&e.unwrap())).collect()
}

#[test]
fn normal_turn_exact_sequence_and_result() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let a = agent(&client);
    let run = a.send_text("scenario:normal hello").unwrap();
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let s2 = statuses.clone();
    run.on_status_change(move |s| s2.lock().unwrap().push(s));
    assert_eq!(sequence(&run), NORMAL);
    let r = run.wait().unwrap();
    assert_eq!(r.status, RunStatus::Finished);
    assert_eq!(r.text, "Hello from the bridge double.");
    assert_eq!(r.model.as_deref(), Some("composer-2"));
    let u = r.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (120, 45, 10, 5)
    );
    assert_eq!(u.total_tokens, 180);
    assert!(r.git.as_ref().unwrap().branches[0].branch.starts_with("double/"));
    assert_eq!(r.error_message, None);
    assert_eq!(
        *statuses.lock().unwrap(),
        vec![RunStatus::Finished],
        "one change, no duplicate RUNNING"
    );
    let json = r.to_json();
    assert_eq!(json["status"], "finished");
    assert_eq!(json["usage"]["inputTokens"], 120);
}

#[test]
fn assistant_text_streams_in_chunks() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = agent(&client).send_text("scenario:normal").unwrap();
    let chunks: Vec<String> = run.text_chunks().map(|c| c.unwrap()).collect();
    assert_eq!(chunks, ["Hello", " from", " the", " bridge", " double."]);
    assert_eq!(run.text().unwrap(), "Hello from the bridge double.");
}

#[test]
fn deltas_and_steps_when_enabled() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let opts = cursor_sdk::options::send_options(Some(r#"{"enableDeltas":true,"enableSteps":true}"#)).unwrap();
    let run = agent(&client)
        .send(proto::UserMessage::text("scenario:normal"), opts)
        .unwrap();
    let events: Vec<Event> = run.events().map(|e| e.unwrap()).collect();
    assert_eq!(events.len(), 26, "27 numbered frames minus done");
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Step).count(), 3);
    assert!(events.iter().filter(|e| e.kind == EventKind::Delta).count() >= 8);
    let offsets: Vec<u64> = events.iter().map(|e| e.offset().unwrap().parse().unwrap()).collect();
    assert_eq!(offsets, (1..=26).collect::<Vec<u64>>());
    // With deltas, the text comes from the deltas (not twice).
    let run = agent(&client)
        .send(
            proto::UserMessage::text("scenario:normal"),
            proto::SendOptions {
                enable_deltas: true,
                ..Default::default()
            },
        )
        .unwrap();
    let text: String = run.text_chunks().map(|c| c.unwrap()).collect();
    assert_eq!(text, "Hello from the bridge double.");
}

#[test]
fn failing_run_takes_its_reason_from_the_status() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = agent(&client).send_text("scenario:fail").unwrap();
    assert_eq!(
        sequence(&run),
        ["msg:status:RUNNING", "msg:status:ERROR", "result:result"]
    );
    let r = run.wait().unwrap();
    assert_eq!(r.status, RunStatus::Error);
    assert_eq!(r.error_code, None);
    assert!(r.error_message.unwrap().contains("scripted failure"));
}

#[test]
fn unknown_envelopes_are_skipped_and_unknown_message_types_pass_through() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = agent(&client).send_text("scenario:unknown").unwrap();
    assert_eq!(
        sequence(&run),
        [
            "msg:system",
            "msg:status:RUNNING",
            "msg:assistant",
            "msg:future_type",
            "msg:assistant",
            "msg:usage",
            "msg:status:FINISHED",
            "result:result"
        ]
    );
}

#[test]
fn keepalives_never_surface() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = agent(&client).send_text("scenario:keepalive:3").unwrap();
    assert_eq!(
        sequence(&run),
        [
            "msg:status:RUNNING",
            "msg:assistant",
            "msg:usage",
            "msg:status:FINISHED",
            "result:result"
        ]
    );
}

#[test]
fn cancel_from_another_thread_wakes_the_consumer() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = Arc::new(agent(&client).send_text("scenario:slow:50").unwrap());
    let r2 = run.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        r2.cancel();
        r2.cancel();
    });
    let t0 = Instant::now();
    let r = run
        .wait_timeout(Some(Duration::from_secs(10)))
        .unwrap()
        .expect("the run ended in time");
    canceller.join().unwrap();
    assert_eq!(r.status, RunStatus::Cancelled);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    run.cancel(); // terminal: documented no-op
}

#[test]
fn polling_with_zero_timeout_never_blocks() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    // One chunk a second: a poll that blocked would wait ~1 s, far above any scheduling noise.
    let run = agent(&client).send_text("scenario:slow:1000").unwrap();
    let (mut seen, mut timeouts, mut worst) = (0, 0, Duration::ZERO);
    let t_end = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < t_end {
        let t0 = Instant::now();
        let next = run.next_event(Some(Duration::ZERO)).unwrap();
        worst = worst.max(t0.elapsed());
        match next {
            Next::Event(_) => seen += 1,
            Next::Timeout => timeouts += 1,
            Next::End => break,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        worst < Duration::from_millis(250),
        "a zero-timeout poll blocked for {worst:?}"
    );
    assert!(seen >= 2 && timeouts > 10, "seen {seen}, timeouts {timeouts}");
    run.cancel();
    assert_eq!(
        run.wait_timeout(Some(Duration::from_secs(5)))
            .unwrap()
            .expect("the run ended in time")
            .status,
        RunStatus::Cancelled
    );
}

#[test]
fn dropped_stream_is_recovered_exactly_once() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    for k in [1, 3, 6, 12] {
        let run = agent(&client).send_text(&format!("scenario:drop:{k}")).unwrap();
        assert_eq!(sequence(&run), NORMAL, "drop after {k} frames");
        let r = run.wait().unwrap();
        assert_eq!(r.status, RunStatus::Finished);
        assert_eq!(r.text, "Hello from the bridge double.");
        assert_eq!(r.usage.unwrap().input_tokens, 120, "usage counted once");
    }
}

#[test]
fn bridge_death_mid_stream_ends_the_run_with_bridge_exited() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let run = agent(&client).send_text("scenario:die:4").unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    let err = loop {
        match run.next_event(Some(Duration::from_secs(10))) {
            Ok(Next::Event(e)) => got.push(describe(&e)),
            Ok(other) => panic!("expected an error, got {other:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind, ErrorKind::BridgeExited, "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(got.len(), 4);
    assert!(matches!(run.next_event(Some(Duration::ZERO)).unwrap(), Next::End));
    let r = run.wait().unwrap();
    assert_eq!(r.status, RunStatus::Error);
    assert!(r.error_message.unwrap().contains("exit"), "the reason names the exit");
}

#[test]
fn frames_over_the_cap_are_refused_and_under_it_delivered() {
    let sb = Sandbox::new();
    let mut o = sb.double_options();
    o.max_frame_bytes = Some(1 << 20);
    let client = Client::new(o).unwrap();
    let run = agent(&client).send_text("scenario:big:900000").unwrap();
    let big = run
        .events()
        .map(|e| e.unwrap())
        .find(|e| e.r#type() == "assistant")
        .unwrap();
    assert!(big.text().unwrap().len() >= 899_000);
    let run = agent(&client).send_text("scenario:big:2000000").unwrap();
    let err = run
        .events()
        .find_map(|e| e.err())
        .expect("the oversized frame is an error");
    assert_eq!(err.kind, ErrorKind::Protocol, "{err}");
    assert!(err.message.contains("exceeds"), "{err}");
}

#[test]
fn many_threads_many_runs_each_in_order_exactly_once() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let n = 200;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let c = client.clone();
            std::thread::spawn(move || {
                let runs: Vec<Run> = (0..20)
                    .map(|_| agent(&c).send_text(&format!("scenario:long:{n}")).unwrap())
                    .collect();
                for run in runs {
                    let texts: Vec<String> = run.text_chunks().map(|t| t.unwrap()).collect();
                    let want: Vec<String> = (0..n).map(|i| format!("t{i} ")).collect();
                    assert_eq!(texts, want);
                    assert_eq!(run.wait().unwrap().status, RunStatus::Finished);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn dropping_a_run_mid_stream_stops_its_reader() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let a = agent(&client);
    client.ping().unwrap();
    let before = thread_count();
    let run = a.send_text("scenario:slow:20").unwrap();
    assert!(matches!(
        run.next_event(Some(Duration::from_secs(5))).unwrap(),
        Next::Event(_)
    ));
    drop(run);
    assert!(
        eventually(Duration::from_secs(2), || thread_count() <= before),
        "reader thread leaked"
    );
}

#[test]
fn observe_resumes_after_an_observe_offset() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let a = agent(&client);
    let run = a.send_text("scenario:normal").unwrap();
    run.wait().unwrap();
    let all: Vec<Event> = run.observe(None).unwrap().events().map(|e| e.unwrap()).collect();
    assert_eq!(all[0].r#type(), "request");
    assert_eq!(all.len(), NORMAL.len() + 1);
    let after = all[4].offset().unwrap().to_string();
    let tail: Vec<Event> = a
        .observe(&run.id(), Some(&after))
        .unwrap()
        .events()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(tail, all[5..].to_vec());
}

#[test]
fn send_model_override_persists_and_prompt_is_one_shot() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let a = agent(&client);
    let opts = cursor_sdk::options::send_options(Some(r#"{"model":"composer-2-fast"}"#)).unwrap();
    let mut o = sb.double_options();
    o.bridge_env.insert(
        "CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON".into(),
        r#"[{"id":"composer-2"},{"id":"composer-2-fast"}]"#.into(),
    );
    let client2 = Client::new(o).unwrap();
    let a2 = agent(&client2);
    a2.send(proto::UserMessage::text("scenario:normal"), opts)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(a2.model().unwrap().id, "composer-2-fast");
    assert_eq!(a.model().unwrap().id, "composer-2");

    let r = client
        .prompt(
            "scenario:normal hi",
            cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap(),
        )
        .unwrap();
    assert_eq!(r.status, RunStatus::Finished);
    assert_eq!(r.text, "Hello from the bridge double.");
}

#[test]
fn images_travel_with_the_message() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    let png = sb.path().join("pixel.png");
    std::fs::write(&png, [0x89, b'P', b'N', b'G']).unwrap();
    let msg = proto::UserMessage::text("scenario:normal look").with_image(proto::SdkImage::from_file(&png).unwrap());
    let run = agent(&client).send(msg, Default::default()).unwrap();
    assert_eq!(run.wait().unwrap().status, RunStatus::Finished);
}

#[test]
fn a_panic_on_the_reader_thread_ends_the_run_with_an_error() {
    let sb = Sandbox::new();
    let client = sb.double_client();
    // The run idles ~250 ms before its status changes, so the listener is in place by then.
    let run = agent(&client).send_text("scenario:keepalive:2").unwrap();
    // Status listeners run on the reader thread: a panicking one stands for any library panic there.
    run.on_status_change(|_| panic!("listener exploded"));
    let err = run
        .events()
        .find_map(|e| e.err())
        .expect("the panic must surface as an error");
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(err.message.contains("listener exploded"), "{err}");
    assert!(matches!(run.next_event(Some(Duration::ZERO)).unwrap(), Next::End));
}
