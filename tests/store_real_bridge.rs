//! A custom store written here carries a local agent's whole life on the real bridge
//! (bridge-behavior.md §4: the traffic and the record shapes), and built-in stores by option.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::Sandbox;
use cursor_sdk::{Client, ErrorKind, RunStatus, Store};
use serde_json::{json, Value};

/// An in-memory agent store with the semantics of the SDK's JSONL reference store.
#[derive(Default)]
struct MemoryStore {
    agents: Mutex<BTreeMap<String, Value>>,
    runs: Mutex<BTreeMap<String, Value>>,
    events: Mutex<BTreeMap<String, Vec<Value>>>,
    calls: Mutex<Vec<String>>,
    fail_agent_create: bool,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn ids(input: &Value, key: &str) -> Vec<String> {
    input["filter"][key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

impl Store for MemoryStore {
    fn call(&self, substore: &str, method: &str, input: Value) -> Result<Option<Value>, String> {
        self.calls.lock().unwrap().push(format!("{substore}.{method}"));
        match (substore, method) {
            ("agents", "create") if self.fail_agent_create => Err("disk on fire".into()),
            ("agents", "create" | "update") => {
                let a = input["agent"].clone();
                let id = a["agentId"].as_str().ok_or("agent without agentId")?.to_string();
                self.agents.lock().unwrap().insert(id, a.clone());
                Ok(Some(a))
            }
            ("agents", "get") => Ok(self
                .agents
                .lock()
                .unwrap()
                .get(input["agentId"].as_str().unwrap_or(""))
                .cloned()),
            ("agents", "list") => {
                let cwd = input["filter"]["cwd"].as_str();
                let mut items: Vec<Value> = self
                    .agents
                    .lock()
                    .unwrap()
                    .values()
                    .filter(|a| cwd.is_none_or(|c| a["cwd"].as_str() == Some(c)))
                    .cloned()
                    .collect();
                items.sort_by_key(|a| std::cmp::Reverse(a["updatedAt"].as_f64().unwrap_or(0.0) as u64));
                Ok(Some(json!({ "items": items })))
            }
            ("agents", "delete") => {
                let mut agents = self.agents.lock().unwrap();
                ids(&input, "agentIds").iter().for_each(|id| drop(agents.remove(id)));
                Ok(None)
            }
            ("runs", "create" | "update") => {
                let r = input["run"].clone();
                let id = r["runId"].as_str().ok_or("run without runId")?.to_string();
                self.runs.lock().unwrap().insert(id, r.clone());
                Ok(Some(r))
            }
            ("runs", "get") => Ok(self
                .runs
                .lock()
                .unwrap()
                .get(input["runId"].as_str().unwrap_or(""))
                .cloned()),
            ("runs", "list") => {
                let agents = ids(&input, "agentIds");
                let mut items: Vec<Value> = self
                    .runs
                    .lock()
                    .unwrap()
                    .values()
                    .filter(|r| agents.is_empty() || agents.iter().any(|a| r["agentId"].as_str() == Some(a)))
                    .cloned()
                    .collect();
                items.sort_by_key(|r| r["turnNumber"].as_f64().unwrap_or(0.0) as u64);
                Ok(Some(json!({ "items": items })))
            }
            ("runs", "delete") => {
                let agents = ids(&input, "agentIds");
                self.runs
                    .lock()
                    .unwrap()
                    .retain(|_, r| !agents.iter().any(|a| r["agentId"].as_str() == Some(a)));
                Ok(None)
            }
            ("runEvents", "append") => {
                let run_id = input["runId"].as_str().ok_or("append without runId")?.to_string();
                let mut events = self.events.lock().unwrap();
                let log = events.entry(run_id.clone()).or_default();
                let seq = log.len() as u64 + 1;
                let event = json!({"runId": run_id, "seq": seq, "offset": seq.to_string(),
                    "eventType": input["eventType"], "payload": input["payload"], "payloadRef": null,
                    "idempotencyKey": null, "createdAt": now_ms()});
                log.push(event.clone());
                Ok(Some(event))
            }
            ("runEvents", "list") => {
                let items = self
                    .events
                    .lock()
                    .unwrap()
                    .get(input["runId"].as_str().unwrap_or(""))
                    .cloned();
                Ok(Some(json!({ "items": items.unwrap_or_default() })))
            }
            ("runEvents", "delete") => {
                let mut events = self.events.lock().unwrap();
                ids(&input, "runIds").iter().for_each(|id| drop(events.remove(id)));
                Ok(None)
            }
            ("checkpoints", "get") => Ok(Some(json!({"found": false}))),
            ("checkpoints", "list") => Ok(Some(json!({"items": []}))),
            ("checkpoints", "delete" | "create" | "update") => Ok(None),
            (s, m) => Err(format!("unexpected store call {s}.{m}")),
        }
    }
}

#[test]
fn a_custom_store_carries_a_local_agents_whole_life() {
    let sb = Sandbox::new();
    let store = Arc::new(MemoryStore::default());
    let client = Client::with_store(sb.options(), store.clone()).unwrap();
    let agent = client
        .create_agent_json(Some(r#"{"model":"composer-2","name":"stored"}"#))
        .unwrap();
    let created: Vec<String> = store.calls.lock().unwrap().clone();
    assert!(
        created.starts_with(&["agents.get".into(), "agents.create".into(), "runs.create".into()]),
        "{created:?}"
    );
    assert!(
        store.agents.lock().unwrap().contains_key(agent.id()),
        "the agent row lives in our store"
    );

    assert_eq!(agent.info().unwrap().name, "stored");
    let page = client.list_agents(Default::default()).unwrap();
    assert_eq!(
        page.items.iter().map(|a| a.agent_id.as_str()).collect::<Vec<_>>(),
        vec![agent.id()]
    );

    // The offline failing turn: its run and events are written to our store.
    let run = agent.send_text("Say hi").unwrap();
    let result = run
        .wait_timeout(Some(Duration::from_secs(60)))
        .unwrap()
        .expect("the run ended in time");
    assert_eq!(result.status, RunStatus::Error);
    assert!(result.error_message.unwrap().contains("API key exchange"));
    let run_row = store
        .runs
        .lock()
        .unwrap()
        .get(&run.id())
        .cloned()
        .expect("run row in our store");
    assert_eq!(run_row["status"], "error");
    assert!(
        store.events.lock().unwrap()[&run.id()].len() >= 2,
        "request + status events appended"
    );

    agent.archive().unwrap();
    assert_eq!(store.agents.lock().unwrap()[agent.id()]["status"], "archived");
    assert!(agent.info().unwrap().archived);
    agent.unarchive().unwrap();
    agent.delete().unwrap();
    assert!(store.agents.lock().unwrap().is_empty(), "deleted from our store");
    assert!(store.runs.lock().unwrap().is_empty());
    assert_eq!(agent.info().unwrap_err().kind, ErrorKind::NotFound);
}

#[test]
fn a_store_failure_is_a_clear_error_to_the_caller() {
    let sb = Sandbox::new();
    let store = Arc::new(MemoryStore {
        fail_agent_create: true,
        ..Default::default()
    });
    let client = Client::with_store(sb.options(), store).unwrap();
    let e = client
        .create_agent_json(Some(r#"{"model":"composer-2"}"#))
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::Internal);
    assert!(e.message.contains("disk on fire"), "{e}");
}

#[test]
fn the_store_token_is_not_on_the_bridge_command_line() {
    let sb = Sandbox::new();
    let client = Client::with_store(sb.options(), Arc::new(MemoryStore::default())).unwrap();
    client.ping().unwrap();
    let pid = client.bridge_pid().unwrap();
    // node's own argv, and its parent launcher's.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let text = String::from_utf8_lossy(&cmdline);
    assert!(text.contains("--local-store"), "{text}");
    assert!(!text.contains("auth-token") && !text.contains("AUTH_TOKEN"), "{text}");
}

#[test]
fn built_in_stores_are_selected_by_option() {
    let sb = Sandbox::new();
    let root = sb.path().join("jsonl-store");
    let mut o = sb.options();
    o.local_store = Some(json!({"type": "jsonl", "rootDir": root.to_str().unwrap()}));
    let client = Client::new(o).unwrap();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    assert_eq!(agent.info().unwrap().agent_id, agent.id());
    assert!(
        std::fs::read_dir(&root).unwrap().count() > 0,
        "the JSONL store wrote under rootDir"
    );

    for (bad, want) in [
        (json!({"type": "jsonl"}), "rootDir"),
        (json!({"type": "custom"}), "store handler"),
        (json!({"type": "weird"}), "unknown"),
        (json!("sqlite"), "object"),
    ] {
        let mut o = sb.options();
        o.local_store = Some(bad.clone());
        let e = Client::new(o).err().expect("bad localStore must fail");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains(want), "{bad}: {e}");
    }
    let mut o = sb.options();
    o.local_store = Some(json!({"type": "sqlite"}));
    Client::new(o)
        .unwrap()
        .create_agent_json(Some(r#"{"model":"composer-2"}"#))
        .unwrap();
}

/// A store that counts the calls inside it and its own drop, and can hold a call.
struct HeldStore {
    inner: MemoryStore,
    hold: Arc<std::sync::atomic::AtomicBool>,
    running: Arc<std::sync::atomic::AtomicUsize>,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
}

impl Store for HeldStore {
    fn call(&self, substore: &str, method: &str, input: Value) -> Result<Option<Value>, String> {
        use std::sync::atomic::Ordering::SeqCst;
        self.running.fetch_add(1, SeqCst);
        if self.hold.load(SeqCst) {
            // Longer than the old server's 2 s grace at stop.
            std::thread::sleep(Duration::from_millis(2500));
        }
        let out = self.inner.call(substore, method, input);
        self.running.fetch_sub(1, SeqCst);
        out
    }
}

impl Drop for HeldStore {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn shutdown_waits_for_a_store_call_and_releases_the_store_while_an_agent_lives() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let sb = Sandbox::new();
    let (hold, running, dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let store = HeldStore {
        inner: MemoryStore::default(),
        hold: hold.clone(),
        running: running.clone(),
        dropped: dropped.clone(),
    };
    let client = Client::with_store(sb.options(), Arc::new(store)).unwrap();
    let agent = client.create_agent_json(Some(r#"{"model":"composer-2"}"#)).unwrap();
    hold.store(true, SeqCst);
    let c2 = client.clone();
    let caller = std::thread::spawn(move || c2.list_agents(Default::default()).map(|_| ()));
    assert!(
        common::eventually(Duration::from_secs(10), || running.load(SeqCst) == 1),
        "the store call never started"
    );
    client.shutdown();
    assert_eq!(running.load(SeqCst), 0, "a store call was still running after shutdown");
    assert_eq!(dropped.load(SeqCst), 1, "the store was not released by shutdown");
    let _ = caller.join().unwrap();
    // The agent (holding a clone of the client) outlives it and only gets errors now.
    assert!(agent.info().is_err());
    drop(agent);
    drop(client);
    assert_eq!(dropped.load(SeqCst), 1, "released exactly once");
}
