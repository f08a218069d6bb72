//! A mixed workload on one client and the bridge double, shared by the concurrency test and the
//! soak driver: each step sends one run of a random kind (normal, long, a tool answered now, tools
//! answered later from other threads, a cancelled slow run), reads every event checking that the
//! offsets go 1, 2, 3… (every event once and in order) and the exact sequence and result, then
//! makes a random management call. Failures come back as values so the soak can tell those a
//! bridge kill explains from real ones.
#![allow(dead_code)]

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cursor_sdk::{proto, Agent, Client, Error, Event, Next, Run, RunStatus, Tool, ToolCall, ToolCompletion};
use serde_json::{json, Value};

use crate::common::{describe, NORMAL};

/// No single event of the double takes this long, even under TSan on a loaded machine.
const EVENT_LIMIT: Duration = Duration::from_secs(120);
/// Events of a long run.
const LONG: usize = 2000;

/// Why a step failed.
pub enum Failure {
    /// An SDK call returned an error.
    Sdk(Error),
    /// The SDK answered, but not what the double scripted.
    Check(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Sdk(e) => write!(f, "sdk error {:?}: {e}", e.kind),
            Failure::Check(m) => write!(f, "check failed: {m}"),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Sdk(e)
    }
}

macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Failure::Check(format!($($msg)+)));
        }
    };
}

/// A small xorshift generator: the steps need variety, not quality, and no extra crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Tools every agent of the client has: `later` answers from a new thread after a few
/// milliseconds, `now` on the callback thread. Both answer `{tool, i}` (`tools:N` calls whichever
/// the double sees first).
pub fn add_tools(client: &Client) {
    struct Later;
    impl cursor_sdk::ToolHandler for Later {
        fn call(&self, call: ToolCall, done: ToolCompletion) {
            std::thread::spawn(move || {
                let i = call.args["i"].as_f64().unwrap_or(0.0) as u64;
                std::thread::sleep(Duration::from_millis(i * 7 % 30));
                let _ = done.complete(Ok(json!({"tool": "later", "i": call.args["i"]})));
            });
        }
    }
    client
        .add_tool(Tool::with_handler(
            "later",
            "answers later",
            Value::Null,
            Arc::new(Later),
        ))
        .expect("register the later tool");
    client
        .add_tool(Tool::new("now", "answers now", Value::Null, |c| {
            Ok(json!({"tool": "now", "i": c.args["i"]}))
        }))
        .expect("register the now tool");
}

/// What a worker has done so far.
#[derive(Default)]
pub struct Counters {
    pub runs: AtomicU64,
    pub events: AtomicU64,
    pub cancels: AtomicU64,
    pub tool_runs: AtomicU64,
    pub management: AtomicU64,
}

/// One worker's state: its current agent and its generator.
pub struct Worker {
    client: Client,
    agent: Option<Agent>,
    /// When the current agent was first created (a resume keeps it: it names the same agent).
    agent_born: Instant,
    runs_on_agent: u32,
    rng: Rng,
    counters: Arc<Counters>,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Normal,
    Long,
    ToolNow,
    ToolLater,
    Tools,
    Cancel,
}

const KINDS: [Kind; 6] = [
    Kind::Normal,
    Kind::Long,
    Kind::ToolNow,
    Kind::ToolLater,
    Kind::Tools,
    Kind::Cancel,
];

fn model_opts() -> proto::AgentOptions {
    cursor_sdk::options::agent_options(Some(r#"{"model":"composer-2"}"#)).unwrap()
}

impl Worker {
    pub fn new(client: Client, seed: u64, counters: Arc<Counters>) -> Worker {
        Worker {
            client,
            agent: None,
            agent_born: Instant::now(),
            runs_on_agent: 0,
            rng: Rng::new(seed),
            counters,
        }
    }

    /// One run and one management call.
    pub fn step(&mut self) -> Result<(), Failure> {
        let agent = self.agent()?;
        let kind = KINDS[self.rng.below(KINDS.len() as u64) as usize];
        let run_id = self.run(&agent, kind)?;
        self.counters.runs.fetch_add(1, Ordering::Relaxed);
        self.manage(&agent, &run_id)?;
        self.counters.management.fetch_add(1, Ordering::Relaxed);
        // Kept only after a clean step: after a failure it may be gone with its bridge.
        self.agent = Some(agent);
        Ok(())
    }

    /// The current agent, or a new one, or the previous one closed and resumed.
    fn agent(&mut self) -> Result<Agent, Failure> {
        let current = self.agent.take();
        if let Some(a) = current {
            if self.runs_on_agent < 4 {
                self.runs_on_agent += 1;
                return Ok(a);
            }
            self.agent = Some(a);
        }
        self.runs_on_agent = 1;
        let agent = match self.agent.take() {
            Some(old) if self.rng.below(2) == 0 => {
                old.close()?;
                let again = self.client.resume_agent(old.id(), model_opts())?;
                check!(again.id() == old.id(), "resume gave {} for {}", again.id(), old.id());
                again
            }
            Some(old) => {
                old.delete()?;
                self.agent_born = Instant::now();
                self.client.create_agent(model_opts())?
            }
            None => {
                self.agent_born = Instant::now();
                self.client.create_agent(model_opts())?
            }
        };
        Ok(agent)
    }

    /// Sends one run of `kind`, checks its events and result, and returns its id.
    fn run(&mut self, agent: &Agent, kind: Kind) -> Result<String, Failure> {
        let text = match kind {
            Kind::Normal => "scenario:normal hi".to_string(),
            Kind::Long => format!("scenario:long:{LONG}"),
            Kind::ToolNow => "scenario:tool:now".to_string(),
            Kind::ToolLater => "scenario:tool:later".to_string(),
            Kind::Tools => "scenario:tools:3".to_string(),
            Kind::Cancel => "scenario:slow:20".to_string(),
        };
        let run = agent.send_text(&text)?;
        let events = if let Kind::Cancel = kind {
            self.cancelled(&run)?
        } else {
            read_all(&run, usize::MAX)?
        };
        self.counters.events.fetch_add(events.len() as u64, Ordering::Relaxed);
        let result = run.wait()?;
        let names: Vec<String> = events.iter().map(describe).collect();
        let want_status = match kind {
            Kind::Cancel => RunStatus::Cancelled,
            _ => RunStatus::Finished,
        };
        check!(
            result.status == want_status,
            "{kind:?}: result {:?}, want {want_status:?}",
            result.status
        );
        check!(result.run_id == run.id(), "{kind:?}: result of run {}", result.run_id);
        match kind {
            Kind::Normal => {
                check!(names == NORMAL, "normal: {names:?}");
                check!(
                    result.text == "Hello from the bridge double.",
                    "normal text {:?}",
                    result.text
                );
            }
            Kind::Long => {
                check!(names.len() == LONG + 5, "long: {} events", names.len());
                let texts: Vec<&str> = events.iter().filter_map(|e| e.text()).collect();
                check!(texts.len() == LONG, "long: {} texts", texts.len());
                for (i, t) in texts.iter().enumerate() {
                    check!(*t == format!("t{i} "), "long: text {i} is {t:?}");
                }
            }
            Kind::ToolNow | Kind::ToolLater | Kind::Tools => {
                self.counters.tool_runs.fetch_add(1, Ordering::Relaxed);
                let n = if let Kind::Tools = kind { 3 } else { 1 };
                let mut want = vec!["msg:system", "msg:status:RUNNING"];
                want.extend(std::iter::repeat_n("msg:tool_call:running", n));
                want.extend(std::iter::repeat_n("msg:tool_call:completed", n));
                want.extend(["msg:assistant", "msg:usage", "msg:status:FINISHED", "result:result"]);
                check!(names == want, "{kind:?}: {names:?}");
                let done: Vec<&Value> = events
                    .iter()
                    .filter(|e| e.r#type() == "tool_call" && e.payload()["status"] == "completed")
                    .map(|e| &e.payload()["result"]["value"])
                    .collect();
                for (i, v) in done.iter().enumerate() {
                    let tool_ok = match kind {
                        Kind::ToolNow => v["tool"] == "now",
                        Kind::ToolLater => v["tool"] == "later",
                        _ => v["tool"] == "now" || v["tool"] == "later",
                    };
                    // Struct numbers come back as doubles.
                    let ok = tool_ok && v["i"].as_f64() == Some(i as f64 + 1.0);
                    check!(ok, "{kind:?}: tool result {i} is {v}");
                }
            }
            Kind::Cancel => {
                let k = names.len();
                check!(k >= 5, "cancel: {names:?}");
                check!(
                    names[..2] == ["msg:system", "msg:status:RUNNING"]
                        && names[2..k - 2].iter().all(|n| n == "msg:assistant")
                        && names[k - 2..] == ["msg:status:CANCELLED", "result:result"],
                    "cancel: {names:?}"
                );
            }
        }
        Ok(run.id())
    }

    /// Reads a slow run's first events, cancels it (through the run or the client, from this or
    /// another thread) and reads on to the end.
    fn cancelled(&mut self, run: &Run) -> Result<Vec<Event>, Failure> {
        let mut events = read_all(run, 3)?;
        let how = self.rng.below(3);
        let canceller = match how {
            0 => {
                run.cancel();
                None
            }
            1 => {
                let (c, agent, id) = (self.client.clone(), run.agent_id().to_string(), run.id());
                Some(std::thread::spawn(move || c.cancel_run(&agent, &id, None)))
            }
            _ => {
                self.client.cancel_run(run.agent_id(), &run.id(), None)?;
                None
            }
        };
        let rest = read_all(run, usize::MAX);
        if let Some(t) = canceller {
            t.join().expect("the cancelling thread panicked")?;
        }
        let rest = rest?;
        check!(
            rest.first().and_then(|e| e.offset()) == Some(&(events.len() + 1).to_string()),
            "cancel: the stream did not go on after offset {}",
            events.len()
        );
        events.extend(rest);
        check_offsets(&events)?;
        self.counters.cancels.fetch_add(1, Ordering::Relaxed);
        Ok(events)
    }

    /// A management call on what the worker just did, or on the whole client.
    fn manage(&mut self, agent: &Agent, run_id: &str) -> Result<(), Failure> {
        match self.rng.below(6) {
            0 => {
                let page = self.client.list_agents(proto::ListAgentsOptions {
                    limit: 50,
                    ..Default::default()
                })?;
                check!(!page.items.is_empty(), "list agents: none");
            }
            1 => {
                let snap = self.client.get_run(
                    run_id,
                    proto::GetRunOptions {
                        agent_id: agent.id().to_string(),
                        ..Default::default()
                    },
                )?;
                check!(snap.run_id == run_id, "get run {run_id}: {}", snap.run_id);
                let terminal = [
                    proto::RunLifecycleStatus::Finished,
                    proto::RunLifecycleStatus::Cancelled,
                ];
                check!(
                    terminal.iter().any(|s| *s as i32 == snap.status),
                    "get run {run_id}: status {}",
                    snap.status
                );
            }
            2 => {
                let page = self.client.list_runs(
                    agent.id(),
                    proto::ListRunsOptions {
                        limit: 100,
                        ..Default::default()
                    },
                )?;
                check!(
                    page.items.iter().any(|r| r.run_id == run_id),
                    "list runs of {}: {run_id} missing",
                    agent.id()
                );
            }
            3 => {
                let me = self.client.me(None)?;
                check!(!me.api_key_name.is_empty() || !me.user_email.is_empty(), "me: {me:?}");
            }
            4 => {
                check!(!self.client.models(None)?.is_empty(), "models: none");
            }
            _ => {
                let info = agent.info()?;
                check!(info.agent_id == agent.id(), "agent info: {}", info.agent_id);
            }
        }
        Ok(())
    }
}

/// Reads up to `max` events (all when `usize::MAX`), checking their offsets go on by one.
fn read_all(run: &Run, max: usize) -> Result<Vec<Event>, Failure> {
    let mut events = Vec::new();
    while events.len() < max {
        match run.next_event(Some(EVENT_LIMIT))? {
            Next::Event(e) => events.push(e),
            Next::End => break,
            Next::Timeout => return Err(Failure::Check(format!("no event within {EVENT_LIMIT:?}"))),
        }
    }
    if max == usize::MAX {
        check_offsets(&events)?;
    }
    Ok(events)
}

/// Offsets strictly increase by exactly one: every event once and in order.
fn check_offsets(events: &[Event]) -> Result<(), Failure> {
    let Some(first) = events.first() else {
        return Ok(());
    };
    let offset = |e: &Event| e.offset().and_then(|o| o.parse::<u64>().ok());
    let start = offset(first).ok_or_else(|| Failure::Check(format!("no offset on {}", describe(first))))?;
    for (i, e) in events.iter().enumerate() {
        check!(
            offset(e) == Some(start + i as u64),
            "event {i} ({}) has offset {:?}, want {}",
            describe(e),
            e.offset(),
            start + i as u64
        );
    }
    Ok(())
}

/// Runs `worker.step()` until `deadline`, passing each failure to `on_failure` with the earliest
/// moment whose events could explain it (the step's start, or the birth of the agent it reused).
pub fn loop_until(worker: &mut Worker, deadline: Instant, mut on_failure: impl FnMut(Instant, Failure)) {
    while Instant::now() < deadline {
        let since = match worker.agent {
            Some(_) => worker.agent_born,
            None => Instant::now(),
        };
        if let Err(f) = worker.step() {
            on_failure(since, f);
        }
    }
}
