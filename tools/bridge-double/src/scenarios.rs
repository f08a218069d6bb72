//! Scripted model turns. Each scenario appends entries to the run's log; see README.md for the sequences.

use crate::proto::{self, RunLifecycleStatus as S};
use crate::runs::{timestamp, Kind, Payload, Run};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Ctx {
    pub run: Arc<Run>,
    pub scenario: String,
    pub arg: Option<String>,
    pub tool_callback: Option<(String, String)>,
    pub custom_tools: Vec<String>,
    pub started: Instant,
}

pub const NORMAL_CHUNKS: [&str; 5] = ["Hello", " from", " the", " bridge", " double."];
pub const OFFLINE_ERROR: &str = "Failed to connect to API key exchange endpoint: fetch failed";

/// Parses `scenario:<name>[:<arg>]` from the first word of the message text, else the env default.
pub fn pick(text: &str) -> (String, Option<String>) {
    let first = text.split_whitespace().next().unwrap_or("");
    let spec = match first.strip_prefix("scenario:") {
        Some(s) => s.to_string(),
        None => std::env::var("CURSOR_SDK_DOUBLE_SCENARIO").unwrap_or_else(|_| "normal".into()),
    };
    match spec.split_once(':') {
        Some((n, a)) => (n.to_string(), Some(a.to_string())),
        None => (spec, None),
    }
}

impl Ctx {
    fn ids(&self) -> (String, String) {
        (self.run.agent_id.clone(), self.run.id.clone())
    }
    fn model(&self) -> Option<proto::ModelSelection> {
        self.run.model.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn model_id(&self) -> String {
        self.model().map(|m| m.id).unwrap_or_default()
    }
    fn sdk(&self, ty: &str, mut payload: Value) -> (Kind, Payload) {
        let (a, r) = self.ids();
        if let Value::Object(m) = &mut payload {
            let mut full = serde_json::Map::new();
            full.insert("type".into(), json!(ty));
            full.insert("agent_id".into(), json!(a));
            full.insert("run_id".into(), json!(r));
            for (k, v) in m.iter() {
                full.insert(k.clone(), v.clone());
            }
            payload = Value::Object(full);
        }
        (
            Kind::Msg,
            Payload::Json(json!({"sdkMessage": {"type": ty, "message": payload}})),
        )
    }
    fn status(&self, s: &str, message: Option<&str>) -> (Kind, Payload) {
        match message {
            Some(m) => self.sdk("status", json!({"status": s, "message": m})),
            None => self.sdk("status", json!({"status": s})),
        }
    }
    fn text(&self, t: &str) -> (Kind, Payload) {
        (Kind::Msg, Payload::Text(t.to_string()))
    }
    fn delta(&self, ty: &str, mut update: Value) -> (Kind, Payload) {
        update["type"] = json!(ty);
        (
            Kind::Delta,
            Payload::Json(json!({"interactionUpdate": {"type": ty, "update": update}})),
        )
    }
    fn step(&self, ty: &str, message: Value) -> (Kind, Payload) {
        (
            Kind::Step,
            Payload::Json(json!({"step": {"type": ty, "step": {"type": ty, "message": message}}})),
        )
    }
    fn system(&self) -> (Kind, Payload) {
        self.sdk(
            "system",
            json!({"subtype": "init", "model": {"id": self.model_id()}, "tools": ["read_file", "edit_file", "shell"]}),
        )
    }
    fn usage_value() -> Value {
        json!({"input_tokens": 120, "output_tokens": 45, "cache_read_tokens": 10, "cache_write_tokens": 5, "total_tokens": 180})
    }
    fn token_usage() -> proto::TokenUsage {
        proto::TokenUsage {
            input_tokens: 120,
            output_tokens: 45,
            cache_read_tokens: 10,
            cache_write_tokens: 5,
            total_tokens: 180,
            reasoning_tokens: None,
        }
    }
    fn base_result(&self, status: S) -> proto::RunResult {
        let (a, r) = self.ids();
        proto::RunResult {
            run_id: r,
            agent_id: a,
            status: status as i32,
            model: self.model(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            created_at: Some(timestamp(self.run.created_ms)),
            ..Default::default()
        }
    }

    /// `usage`, `status FINISHED`, `result FINISHED`, `done` (plus `turn-ended` delta before usage).
    fn finish_ok(&self, result_text: Option<String>) -> bool {
        if !self.run.push(vec![
            self.delta("turn-ended", json!({"usage": Self::usage_value()})),
            self.sdk("usage", json!({"usage": Self::usage_value()})),
        ]) {
            return false;
        }
        let text = result_text.unwrap_or_else(|| self.run.lock().assistant_text.clone());
        let mut r = self.base_result(S::Finished);
        r.result = text;
        r.usage = Some(Self::token_usage());
        r.git = Some(proto::RunGitInfo {
            branches: vec![proto::RunGitBranchInfo {
                repo_url: "https://github.com/cursor/bridge-double-fixture".into(),
                branch: format!("double/{}", self.run.id),
                pr_url: String::new(),
            }],
        });
        let (a, rid) = self.ids();
        let status = json!({"type": "status", "agent_id": a, "run_id": rid, "status": "FINISHED"});
        self.run.complete(Some(status), r.clone(), r, None)
    }

    fn sleep_ms(&self, ms: u64) -> bool {
        ms == 0 || self.run.sleep(Duration::from_millis(ms))
    }

    fn arg_u64(&self, default: u64) -> u64 {
        self.arg.as_deref().and_then(|a| a.parse().ok()).unwrap_or(default)
    }
}

pub fn run(ctx: Ctx) {
    match ctx.scenario.as_str() {
        "fail" => fail(&ctx),
        "offline" => offline(&ctx),
        "slow" => slow(&ctx),
        "long" => long(&ctx),
        "big" => big(&ctx),
        "unknown" => unknown(&ctx),
        "keepalive" => keepalive(&ctx),
        "tool" => tools(&ctx, 1, ctx.arg.clone()),
        "tools" => tools(&ctx, ctx.arg_u64(2).max(1) as usize, None),
        "toolseq" => toolseq(&ctx, ctx.arg_u64(100).max(1) as usize),
        "drop" | "die" => normal(&ctx, 20),
        _ => normal(&ctx, 0),
    };
}

/// The `normal` sequence; `pace_ms` > 0 inserts a delay between events (drop/die use it).
fn normal(c: &Ctx, pace_ms: u64) -> bool {
    let thinking = "Planning a short greeting.";
    let mut seq = vec![
        c.system(),
        c.status("RUNNING", None),
        c.delta("thinking-delta", json!({"text": thinking})),
        c.sdk("thinking", json!({"text": thinking, "thinking_duration_ms": 12})),
        c.delta("thinking-completed", json!({"thinkingDurationMs": 12})),
        c.step("thinkingMessage", json!({"text": thinking, "thinkingDurationMs": 12})),
    ];
    for t in NORMAL_CHUNKS {
        seq.push(c.delta("text-delta", json!({"text": t})));
        seq.push(c.text(t));
    }
    seq.push(c.step("assistantMessage", json!({"text": NORMAL_CHUNKS.concat()})));
    let args = json!({"path": "README.md"});
    let tool_call = json!({"name": "read_file", "args": args});
    seq.push(c.delta(
        "tool-call-started",
        json!({"callId": "call-double-1", "toolCall": tool_call}),
    ));
    seq.push(c.sdk(
        "tool_call",
        json!({"call_id": "call-double-1", "name": "read_file", "status": "running", "args": args}),
    ));
    let result = json!({"status": "success", "value": {"content": "# bridge double fixture\n"}});
    seq.push(c.sdk(
        "tool_call",
        json!({"call_id": "call-double-1", "name": "read_file", "status": "completed", "args": args, "result": result}),
    ));
    seq.push(c.delta(
        "tool-call-completed",
        json!({"callId": "call-double-1", "toolCall": tool_call}),
    ));
    seq.push(c.step(
        "toolCall",
        json!({"callId": "call-double-1", "name": "read_file", "args": args, "result": result}),
    ));
    for item in seq {
        let counts = !matches!(item.0, Kind::Delta | Kind::Step);
        if !c.run.push(vec![item]) {
            return false;
        }
        if counts && !c.sleep_ms(pace_ms) {
            return false;
        }
    }
    c.finish_ok(None)
}

fn error_result(c: &Ctx, live_msg: &str, stored_msg: &str, live_has_message: bool) -> bool {
    let (a, r) = c.ids();
    let mut live = c.base_result(S::Error);
    if live_has_message {
        live.error_message = Some(live_msg.to_string());
    }
    let mut stored = c.base_result(S::Error);
    stored.error_code = Some("unknown".into());
    stored.error_message = Some(stored_msg.to_string());
    let status = json!({"type": "status", "agent_id": a, "run_id": r, "status": "ERROR", "message": live_msg});
    c.run.complete(Some(status), live, stored, None)
}

fn fail(c: &Ctx) -> bool {
    if !c.run.push(vec![c.status("RUNNING", None)]) {
        return false;
    }
    let m = "The double's scripted failure: the model provider returned an error";
    error_result(c, &format!("[unknown] {m}"), m, false)
}

fn offline(c: &Ctx) -> bool {
    let ms = std::env::var("CURSOR_SDK_DOUBLE_OFFLINE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(300);
    if !c.run.push(vec![c.status("RUNNING", None)]) || !c.sleep_ms(ms / 2) {
        return false;
    }
    if !c.run.push(vec![(Kind::Keepalive, Payload::Json(json!({})))]) || !c.sleep_ms(ms - ms / 2) {
        return false;
    }
    error_result(c, &format!("[unknown] {OFFLINE_ERROR}"), OFFLINE_ERROR, true)
}

fn slow(c: &Ctx) -> bool {
    let every = c.arg_u64(100).max(1);
    if !c.run.push(vec![c.system(), c.status("RUNNING", None)]) {
        return false;
    }
    let end = Instant::now() + Duration::from_secs(60);
    let mut i = 0u64;
    while Instant::now() < end {
        i += 1;
        let t = format!("chunk {i} ");
        if !c.run.push(vec![c.delta("text-delta", json!({"text": t})), c.text(&t)]) || !c.sleep_ms(every) {
            return false;
        }
    }
    c.finish_ok(None)
}

fn long(c: &Ctx) -> bool {
    let n = c.arg_u64(1000);
    if !c.run.push(vec![c.system(), c.status("RUNNING", None)]) {
        return false;
    }
    let mut i = 0u64;
    while i < n {
        let batch: Vec<(Kind, Payload)> = (i..n.min(i + 4096)).map(|k| c.text(&format!("t{k} "))).collect();
        i += batch.len() as u64;
        if !c.run.push(batch) {
            return false;
        }
    }
    c.finish_ok(Some(format!("long:{n} streamed {n} assistant events")))
}

fn big(c: &Ctx) -> bool {
    let n = c.arg_u64(1 << 20) as usize;
    if !c.run.push(vec![c.system(), c.status("RUNNING", None)]) {
        return false;
    }
    let text: String = "0123456789abcdef".chars().cycle().take(n).collect();
    if !c.run.push(vec![c.text(&text)]) {
        return false;
    }
    c.finish_ok(Some(format!("big:{n} sent one assistant event of {n} text bytes")))
}

fn unknown(c: &Ctx) -> bool {
    let (a, r) = c.ids();
    let items = vec![
        c.system(),
        c.status("RUNNING", None),
        c.text("Before unknown frames."),
        (
            Kind::Unknown,
            Payload::Json(json!({"futureEnvelope": {"kind": "future", "n": 1}})),
        ),
        (
            Kind::Msg,
            Payload::Json(json!({"sdkMessage": {"type": "future_type", "message":
                {"type": "future_type", "agent_id": a, "run_id": r, "data": {"x": 1}}}})),
        ),
        c.text(" After unknown frames."),
    ];
    c.run.push(items) && c.finish_ok(None)
}

fn keepalive(c: &Ctx) -> bool {
    let n = c.arg_u64(1);
    let ka = crate::runs::keepalive_interval();
    if !c.run.push(vec![c.status("RUNNING", None)]) {
        return false;
    }
    if !c.run.sleep(ka * n as u32 + ka / 2) {
        return false;
    }
    c.run.push(vec![c.text("Still here after keepalives.")]) && c.finish_ok(None)
}

/// Calls the host's custom tool; Ok(result object) or Err(message).
pub fn call_tool(
    cb: &Option<(String, String)>,
    name: &str,
    args: &Value,
    call_id: &str,
    agent_id: &str,
) -> Result<Value, String> {
    let Some((url, token)) = cb else {
        return Err("no tool callback server is configured".into());
    };
    let body = serde_json::to_vec(&json!({"toolName": name, "args": args, "toolCallId": call_id, "agentId": agent_id}))
        .expect("json");
    let resp = crate::http::post_connect_json(url, "/sdk.v1.SdkCustomToolCallbackService/CallCustomTool", token, &body)
        .map_err(|e| format!("[unavailable] {e}"))?;
    let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    if resp.status != 200 {
        let code = v.get("code").and_then(Value::as_str).unwrap_or("unknown");
        let msg = v.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(format!("[{code}] {msg}"));
    }
    Ok(v.get("result").cloned().unwrap_or(json!({})))
}

fn tools(c: &Ctx, n: usize, name: Option<String>) -> bool {
    let name = name
        .or_else(|| c.custom_tools.first().cloned())
        .unwrap_or_else(|| "echo".into());
    let (a, _) = c.ids();
    if !c.run.push(vec![c.system(), c.status("RUNNING", None)]) {
        return false;
    }
    let calls: Vec<(String, Value)> = (1..=n)
        .map(|i| {
            (
                format!("call-double-{i}"),
                json!({"input": format!("hello from the double #{i}"), "i": i}),
            )
        })
        .collect();
    let mut started = Vec::new();
    for (id, args) in &calls {
        let tc = json!({"name": name, "args": args});
        started.push(c.delta("tool-call-started", json!({"callId": id, "toolCall": tc})));
        started.push(c.sdk(
            "tool_call",
            json!({"call_id": id, "name": name, "status": "running", "args": args}),
        ));
    }
    if !c.run.push(started) {
        return false;
    }
    let handles: Vec<_> = calls
        .iter()
        .map(|(id, args)| {
            let (cb, name, args, id, a) = (
                c.tool_callback.clone(),
                name.clone(),
                args.clone(),
                id.clone(),
                a.clone(),
            );
            std::thread::spawn(move || call_tool(&cb, &name, &args, &id, &a))
        })
        .collect();
    let results: Vec<Result<Value, String>> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| Err("tool thread panicked".into())))
        .collect();
    let mut done = Vec::new();
    let mut summary = Vec::new();
    for ((id, args), res) in calls.iter().zip(&results) {
        let (status, result) = match res {
            Ok(v) => ("completed", json!({"status": "success", "value": v})),
            Err(e) => ("error", json!({"status": "error", "error": e})),
        };
        summary.push(match res {
            Ok(v) => format!("{id}={}", serde_json::to_string(v).unwrap_or_default()),
            Err(e) => format!("{id} failed: {e}"),
        });
        let tc = json!({"name": name, "args": args, "result": result});
        done.push(c.sdk(
            "tool_call",
            json!({"call_id": id, "name": name, "status": status, "args": args, "result": result}),
        ));
        done.push(c.delta("tool-call-completed", json!({"callId": id, "toolCall": tc})));
        done.push(c.step(
            "toolCall",
            json!({"callId": id, "name": name, "args": args, "result": result}),
        ));
    }
    let text = format!("Tool {name} results: {}", summary.join("; "));
    done.push(c.delta("text-delta", json!({"text": text})));
    done.push(c.text(&text));
    c.run.push(done) && c.finish_ok(None)
}

/// `toolseq:<n>` (benchmarks): n sequential `CallCustomTool` calls of the agent's first custom tool
/// (else `echo`) over one kept-alive connection (re-opened whenever the host closes it), each
/// timed from writing the request to reading the whole response. No tool_call events; one
/// `assistant` message carries `toolseq {"ok":k,"errors":e,"connects":c,"ns":[…]}`.
fn toolseq(c: &Ctx, n: usize) -> bool {
    let name = c.custom_tools.first().cloned().unwrap_or_else(|| "echo".into());
    let (a, _) = c.ids();
    if !c.run.push(vec![c.system(), c.status("RUNNING", None)]) {
        return false;
    }
    let Some((url, token)) = c.tool_callback.clone() else {
        return c
            .run
            .push(vec![c.text("toolseq: no tool callback server is configured")])
            && c.finish_ok(None);
    };
    let mut client = match crate::http::KeepAliveClient::new(&url) {
        Ok(k) => k,
        Err(e) => return c.run.push(vec![c.text(&format!("toolseq: {e}"))]) && c.finish_ok(None),
    };
    let (mut ok, mut errors, mut ns) = (0usize, 0usize, Vec::with_capacity(n));
    for i in 1..=n {
        let body = serde_json::to_vec(&json!({"toolName": name, "args": {"input": "ping", "i": i}, "toolCallId": format!("call-double-{i}"), "agentId": a}))
            .expect("json");
        let t = Instant::now();
        let res = client.post_json("/sdk.v1.SdkCustomToolCallbackService/CallCustomTool", &token, &body);
        ns.push(t.elapsed().as_nanos() as u64);
        match res {
            Ok(r) if r.status == 200 => ok += 1,
            _ => errors += 1,
        }
    }
    let report = json!({"ok": ok, "errors": errors, "connects": client.connects, "ns": ns});
    c.run.push(vec![c.text(&format!("toolseq {report}"))]) && c.finish_ok(None)
}
