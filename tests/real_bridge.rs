//! The blocking client against the real bridge (cursor-sdk 1.1.0), offline.

mod common;

use std::time::{Duration, Instant};

use common::{alive, eventually, Sandbox};
use cursor_sdk::{proto, Client, ClientOptions, ErrorKind};

#[test]
fn handshake_ping_and_version() {
    let sb = Sandbox::new();
    let client = sb.client();
    assert!(client.bridge_pid().is_none(), "launch is lazy");
    client.ping().unwrap();
    let v = client.version().unwrap();
    assert_eq!(v.protocol_version, "sdk.v1");
    assert_eq!(v.bridge_version, "1.0.0");
    assert!(
        v.capabilities.iter().any(|c| c == "agent.create"),
        "{:?}",
        v.capabilities
    );
    assert!(alive(client.bridge_pid().unwrap()));
}

#[test]
fn wrong_token_is_an_auth_error() {
    let sb = Sandbox::new();
    let owner = sb.client();
    owner.start().unwrap();
    let url = owner.bridge_url().unwrap();
    let attached = Client::new(ClientOptions {
        bridge_url: Some(url),
        bridge_token: Some("wrong-token".into()),
        ..ClientOptions::default()
    })
    .unwrap();
    let e = attached.ping().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
    assert_eq!(e.http_status, Some(401));
    // Streams report auth failures inside a 200 response; still an auth error.
    let agent_err = attached.create_agent_json(None).err().unwrap();
    assert_eq!(agent_err.kind, ErrorKind::Auth);
    // The attached client never stops a bridge it did not launch.
    drop(attached);
    owner.ping().unwrap();
}

#[test]
fn bridge_that_exits_before_ready_reports_its_stderr() {
    let sb = Sandbox::new();
    let mut o = sb.options();
    o.bridge_args.push("--bogus".into());
    let e = Client::new(o).unwrap().ping().unwrap_err();
    assert_eq!(e.kind, ErrorKind::BridgeStartFailed, "{e}");
    assert!(e.message.contains("Unknown argument: --bogus"), "{e}");
}

#[test]
fn local_agent_lifecycle_with_paging() {
    let sb = Sandbox::new();
    let client = sb.client();
    let agents: Vec<_> = (0..3)
        .map(|i| {
            client
                .create_agent_json(Some(&format!(r#"{{"model":"composer-2","name":"a{i}"}}"#)))
                .unwrap()
        })
        .collect();
    let first = &agents[0];
    assert_eq!(first.model().unwrap().id, "composer-2");
    assert_eq!(first.cwd(), Some(sb.path().to_str().unwrap()));

    let info = first.info().unwrap();
    assert_eq!(info.agent_id, first.id());
    assert_eq!(info.name, "a0");

    // Paged listing with limit 1 walks every agent exactly once.
    let page = client
        .list_agents(proto::ListAgentsOptions {
            limit: 1,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.next_cursor.is_some());
    let mut ids: Vec<String> = client
        .agents(proto::ListAgentsOptions {
            limit: 1,
            ..Default::default()
        })
        .map(|a| a.unwrap().agent_id)
        .collect();
    ids.sort();
    let mut want: Vec<String> = agents.iter().map(|a| a.id().to_string()).collect();
    want.sort();
    assert_eq!(ids, want);

    first.archive().unwrap();
    assert!(first.info().unwrap().archived);
    first.unarchive().unwrap();
    assert!(!first.info().unwrap().archived);
    first.close().unwrap();
    first.delete().unwrap();
    let e = first.info().unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert_eq!(e.sdk_code(), Some(proto::SdkErrorCode::AgentNotFound));
}

#[test]
fn unknown_agent_is_not_found_on_every_management_call() {
    let sb = Sandbox::new();
    let client = sb.client();
    let id = "agent-00000000-0000-0000-0000-000000000000";
    let op = proto::AgentOperationOptions::default;
    let check = |what: &str, r: cursor_sdk::Result<()>| {
        let e = r.expect_err(what);
        assert_eq!(e.kind, ErrorKind::NotFound, "{what}: {e}");
    };
    check("get", client.get_agent(id, op()).map(drop));
    check("archive", client.archive_agent(id, op()));
    check("unarchive", client.unarchive_agent(id, op()));
    check("delete", client.delete_agent(id, op()));
    check("list runs", client.list_runs(id, Default::default()).map(drop));
    check("resume", client.resume_agent(id, Default::default()).map(drop));
    check("get run", client.get_run("run-00000000", Default::default()).map(drop));
    check("conversation", client.run_conversation("run-00000000").map(drop));
    // Calls on a handle the bridge does not know (resumed id that was never created).
    let agent = sb
        .client()
        .create_agent_json(Some(r#"{"model":"composer-2"}"#))
        .unwrap();
    let ghost = client.agent_handle(id, agent.cwd());
    check("close", ghost.close());
    check("reload", ghost.reload());
    check("artifacts", ghost.artifacts().map(drop));
    check("usage", ghost.usage(None).map(drop));
    check("messages", ghost.messages(Default::default()).map(drop));
    check("download", ghost.download_artifact("x.txt").map(drop));
}

#[test]
fn catalog_calls_offline_give_clear_errors() {
    let sb = Sandbox::new();
    let mut o = sb.options();
    o.api_key = None;
    o.bridge_env.insert("CURSOR_API_KEY".into(), String::new());
    let no_key = Client::new(o).unwrap();
    if no_key.api_key().is_none() {
        let e = no_key.me(None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(e.message.contains("CURSOR_API_KEY"), "{e}");
    }
    let client = sb.client();
    for (what, r) in [
        ("me", client.me(None).map(drop)),
        ("models", client.models(None).map(drop)),
        ("repositories", client.repositories(None).map(drop)),
    ] {
        let e = r.expect_err(what);
        assert_eq!(e.kind, ErrorKind::Unavailable, "{what}: {e}");
        assert!(e.message.contains("Network request failed"), "{what}: {e}");
    }
}

#[test]
fn killed_bridge_fails_the_next_call_fast() {
    let sb = Sandbox::new();
    let mut o = sb.options();
    o.verbose = true; // so the bridge has a stderr tail to report
    let client = Client::new(o).unwrap();
    client.ping().unwrap();
    let pid = client.bridge_pid().unwrap();
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    assert!(eventually(Duration::from_secs(2), || !alive(pid)));
    let t0 = Instant::now();
    let e = client.ping().unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(1), "took {:?}", t0.elapsed());
    assert_eq!(e.kind, ErrorKind::BridgeExited, "{e}");
    assert!(e.message.contains("Ping"), "stderr tail missing: {e}");
    // The next call starts a fresh bridge.
    client.ping().unwrap();
    assert_ne!(client.bridge_pid().unwrap(), pid);
}

#[test]
fn dropping_the_client_leaves_no_process_and_no_token_dir() {
    let sb = Sandbox::new();
    let tmp = sb.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut o = sb.options();
    o.bridge_env.insert("TMPDIR".into(), tmp.to_string_lossy().into_owned());
    let client = Client::new(o).unwrap();
    client.ping().unwrap();
    let pid = client.bridge_pid().unwrap();
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1, "the bridge's token dir");
    let t0 = Instant::now();
    drop(client);
    assert!(t0.elapsed() < Duration::from_secs(7));
    assert!(
        eventually(Duration::from_secs(2), || !alive(pid)),
        "bridge {pid} still running"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn shutdown_is_idempotent_and_refuses_later_calls() {
    let sb = Sandbox::new();
    let client = sb.client();
    client.ping().unwrap();
    let pid = client.bridge_pid().unwrap();
    let c2 = client.clone();
    let t = std::thread::spawn(move || c2.shutdown());
    client.shutdown();
    t.join().unwrap();
    assert!(!alive(pid));
    assert_eq!(client.ping().unwrap_err().kind, ErrorKind::Usage);
}

#[test]
fn one_client_many_threads() {
    let sb = Sandbox::new();
    let client = sb.client();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let c = client.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    c.ping().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let pid = client.bridge_pid().unwrap();
    assert!(alive(pid), "exactly one bridge serves all threads");
}

#[test]
fn unknown_client_option_is_rejected_by_name() {
    let e = Client::from_json(Some(r#"{"bridgePth":"/x"}"#)).err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("bridgePth"), "{e}");
    let e = Client::from_json(Some(r#"{"bridgeUrl":"http://127.0.0.1:1"}"#))
        .err()
        .unwrap();
    assert!(e.message.contains("bridgeToken"), "{e}");
}

#[test]
fn idempotency_keys_on_create() {
    let sb = Sandbox::new();
    let client = sb.client();
    // The bridge refuses keys for local agents: a clear, typed error, not a silent drop.
    let e = client
        .create_agent_json(Some(r#"{"model":"composer-2","idempotencyKey":"k1"}"#))
        .err()
        .expect("local + key must fail");
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("Idempotency-Key"), "{e}");
    // Cloud creates get a key minted for them (and may take one); offline they still succeed.
    let cloud = r#"{"model":"composer-2","cloud":{"repos":[{"url":"https://github.com/a/b"}]}}"#;
    let a = client.create_agent_json(Some(cloud)).unwrap();
    assert!(a.id().starts_with("bc-"), "{}", a.id());
    let keyed =
        r#"{"model":"composer-2","idempotencyKey":"same-key","cloud":{"repos":[{"url":"https://github.com/a/b"}]}}"#;
    client.create_agent_json(Some(keyed)).unwrap();
    let e = client.create_agent_json(Some(r#"{"idempotencyKey":7}"#)).err().unwrap();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
}
