//! Runs: a durable per-run event log, live followers (Send / ObserveRun writers), cancellation.

use crate::connect::{end_frame, push_frame, Codec, ConnectError};
use crate::http;
use crate::proto::{self, RunLifecycleStatus as S};
use prost::Message;
use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// The `request` sdk_message: in the durable log only (ObserveRun offset 1), never on Send.
    Request,
    Msg,
    Delta,
    Step,
    /// A frame with an unknown envelope case (field 7).
    Unknown,
    /// An explicit keepalive on the live Send stream (not in the log).
    Keepalive,
    Result,
    Done,
}

pub enum Payload {
    /// The JSON form of the `RunStreamMessage` without `offset`.
    Json(Value),
    /// An assistant text message (fast path for `long:<n>`).
    Text(String),
}

pub struct Entry {
    pub kind: Kind,
    pub payload: Payload,
    /// What ObserveRun/GetRun see instead, when it differs (the offline result).
    pub observe: Option<Value>,
    /// ObserveRun offset; 0 for entries not in the durable log.
    pub obs_offset: u64,
}

pub struct RunState {
    pub entries: Vec<Entry>,
    pub started: bool,
    pub complete: bool,
    pub status: S,
    pub live_result: Option<proto::RunResult>,
    pub stored_result: Option<proto::RunResult>,
    pub usage: Option<proto::TokenUsage>,
    pub assistant_text: String,
    pub user_text: String,
    obs_count: u64,
}

pub struct Run {
    pub id: String,
    pub agent_id: String,
    pub created_ms: u64,
    pub model: Mutex<Option<proto::ModelSelection>>,
    pub st: Mutex<RunState>,
    pub cv: Condvar,
}

pub fn keepalive_interval() -> Duration {
    let ms = std::env::var("CURSOR_SDK_DOUBLE_KEEPALIVE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(15_000);
    Duration::from_millis(ms.max(1))
}

impl Run {
    pub fn new(id: String, agent_id: String, model: Option<proto::ModelSelection>) -> Run {
        Run {
            id,
            agent_id,
            created_ms: crate::util::now_ms(),
            model: Mutex::new(model),
            st: Mutex::new(RunState {
                entries: Vec::new(),
                started: false,
                complete: false,
                status: S::Running,
                live_result: None,
                stored_result: None,
                usage: None,
                assistant_text: String::new(),
                user_text: String::new(),
                obs_count: 0,
            }),
            cv: Condvar::new(),
        }
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_complete(&self) -> bool {
        self.lock().complete
    }

    /// Appends entries unless the run is already complete. Returns false when it was.
    pub fn push(&self, items: Vec<(Kind, Payload)>) -> bool {
        let mut st = self.lock();
        if st.complete {
            return false;
        }
        for (kind, payload) in items {
            push_locked(&mut st, kind, payload, None);
        }
        drop(st);
        self.cv.notify_all();
        true
    }

    /// Sleeps up to `d`; returns false if the run completed (cancelled) meanwhile.
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut st = self.lock();
        loop {
            if st.complete {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            st = self
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Appends the terminal status message (if any), result and done, and marks the run complete.
    /// Returns false if it was already complete.
    pub fn complete(
        &self,
        status_msg: Option<Value>,
        live: proto::RunResult,
        stored: proto::RunResult,
        envelope_error_code: Option<String>,
    ) -> bool {
        let mut st = self.lock();
        if st.complete {
            return false;
        }
        if let Some(m) = status_msg {
            push_locked(
                &mut st,
                Kind::Msg,
                Payload::Json(json!({"sdkMessage": {"type": "status", "message": m}})),
                None,
            );
        }
        let mk = |r: &proto::RunResult, code: Option<String>| {
            let env = proto::RunStreamResult {
                agent_id: self.agent_id.clone(),
                run_id: self.id.clone(),
                status: r.status,
                error_code: code,
                result: Some(r.clone()),
            };
            json!({"result": serde_json::to_value(&env).expect("json")})
        };
        let live_json = mk(&live, envelope_error_code.clone());
        let stored_json = mk(&stored, stored.error_code.clone());
        push_locked(&mut st, Kind::Result, Payload::Json(live_json), Some(stored_json));
        push_locked(
            &mut st,
            Kind::Done,
            Payload::Json(json!({"done": {"agentId": self.agent_id, "runId": self.id}})),
            None,
        );
        st.status = S::try_from(live.status).unwrap_or(S::Error);
        st.usage = live.usage;
        st.live_result = Some(live);
        st.stored_result = Some(stored);
        st.complete = true;
        drop(st);
        self.cv.notify_all();
        true
    }

    /// Blocks until the run is complete; returns the stored result.
    pub fn wait(&self) -> proto::RunResult {
        let mut st = self.lock();
        while !st.complete {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.stored_result.clone().expect("result")
    }

    pub fn snapshot(&self) -> proto::RunSnapshot {
        let st = self.lock();
        let model = self.model.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match &st.stored_result {
            Some(r) => proto::RunSnapshot {
                run_id: r.run_id.clone(),
                agent_id: r.agent_id.clone(),
                status: r.status,
                result: r.result.clone(),
                model: r.model.clone(),
                duration_ms: r.duration_ms,
                git: r.git.clone(),
                created_at: r.created_at,
                usage: r.usage,
                error_code: r.error_code.clone(),
                error_message: r.error_message.clone(),
            },
            None => proto::RunSnapshot {
                run_id: self.id.clone(),
                agent_id: self.agent_id.clone(),
                status: S::Running as i32,
                model,
                created_at: Some(timestamp(self.created_ms)),
                ..Default::default()
            },
        }
    }
}

fn push_locked(st: &mut RunState, kind: Kind, payload: Payload, observe: Option<Value>) {
    let obs_offset = match kind {
        Kind::Request | Kind::Msg | Kind::Unknown | Kind::Result | Kind::Done => {
            st.obs_count += 1;
            st.obs_count
        }
        _ => 0,
    };
    if let (Kind::Msg, Payload::Text(t)) = (kind, &payload) {
        st.assistant_text.push_str(t);
    }
    st.entries.push(Entry {
        kind,
        payload,
        observe,
        obs_offset,
    });
}

pub fn timestamp(ms: u64) -> pbjson_types::Timestamp {
    pbjson_types::Timestamp {
        seconds: (ms / 1000) as i64,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

/// JSON → `google.protobuf.Value`.
pub fn pb_value(v: &Value) -> pbjson_types::Value {
    use pbjson_types::value::Kind as K;
    let kind = match v {
        Value::Null => K::NullValue(0),
        Value::Bool(b) => K::BoolValue(*b),
        Value::Number(n) => K::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => K::StringValue(s.clone()),
        Value::Array(a) => K::ListValue(pbjson_types::ListValue {
            values: a.iter().map(pb_value).collect(),
        }),
        Value::Object(_) => K::StructValue(pb_struct(v)),
    };
    pbjson_types::Value { kind: Some(kind) }
}

pub fn pb_struct(v: &Value) -> pbjson_types::Struct {
    let mut s = pbjson_types::Struct::default();
    if let Value::Object(m) = v {
        for (k, x) in m {
            s.fields.insert(k.clone(), pb_value(x));
        }
    }
    s
}

/// Appends an entry as one data frame for a codec and offset.
fn push_entry_frame(out: &mut Vec<u8>, run: &Run, e: &Entry, observe: bool, codec: Codec, offset: Option<u64>) {
    let start = out.len();
    out.extend_from_slice(&[0; 5]);
    encode_entry(out, run, e, observe, codec, offset);
    let len = (out.len() - start - 5) as u32;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
}

/// Appends the frame payload (without the 5-byte header) of an entry for a codec and offset.
fn encode_entry(out: &mut Vec<u8>, run: &Run, e: &Entry, observe: bool, codec: Codec, offset: Option<u64>) {
    let json_payload: std::borrow::Cow<'_, Value> = match (&e.payload, observe, &e.observe) {
        (_, true, Some(o)) => std::borrow::Cow::Borrowed(o),
        (Payload::Json(v), _, _) => std::borrow::Cow::Borrowed(v),
        (Payload::Text(t), _, _) => match codec {
            Codec::Json => {
                // fast path: pre-shaped JSON text
                let mut s = String::with_capacity(t.len() + 256);
                s.push_str(r#"{"sdkMessage":{"type":"assistant","message":{"type":"assistant","agent_id":"#);
                s.push_str(&serde_json::to_string(&run.agent_id).expect("json"));
                s.push_str(r#","run_id":"#);
                s.push_str(&serde_json::to_string(&run.id).expect("json"));
                s.push_str(r#","message":{"role":"assistant","content":[{"type":"text","text":"#);
                s.push_str(&serde_json::to_string(t).expect("json"));
                s.push_str("}]}}}");
                if let Some(o) = offset {
                    s.push_str(&format!(r#","offset":"{o}""#));
                }
                s.push('}');
                return out.extend_from_slice(s.as_bytes());
            }
            Codec::Proto => return assistant_proto(out, &run.agent_id, &run.id, t, offset),
        },
    };
    let v = json_payload.as_ref();
    match codec {
        Codec::Json => {
            let mut v = v.clone();
            if let (Some(o), Value::Object(m)) = (offset, &mut v) {
                m.insert("offset".into(), Value::String(o.to_string()));
            }
            serde_json::to_writer(&mut *out, &v).expect("json")
        }
        Codec::Proto => {
            if e.kind == Kind::Unknown {
                // field 7 (unknown to this protocol version), length-delimited, raw JSON bytes inside
                let inner = serde_json::to_vec(v.get("futureEnvelope").unwrap_or(&Value::Null)).expect("json");
                ld_head(out, 7, inner.len());
                out.extend_from_slice(&inner);
            } else {
                let m: proto::RunStreamMessage =
                    serde_json::from_value(v.clone()).expect("valid RunStreamMessage JSON");
                m.encode(out).expect("Vec grows");
            }
            if let Some(o) = offset {
                let s = o.to_string();
                ld_head(out, 4, s.len());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
}

/// Length of a length-delimited field with a one-byte tag and an `n`-byte body.
fn ld_len(n: usize) -> usize {
    1 + prost::encoding::encoded_len_varint(n as u64) + n
}

fn ld_head(out: &mut Vec<u8>, tag: u8, n: usize) {
    out.push(tag << 3 | 2);
    prost::encoding::encode_varint(n as u64, out);
}

/// Length of a `google.protobuf.Struct` field (map entry) whose `Value` body is `v` bytes.
fn field_len(key: &str, v: usize) -> usize {
    ld_len(ld_len(key.len()) + ld_len(v))
}

/// Writes the head of a `Struct` field (entry, key, value) whose `Value` body is `v` bytes.
fn field_head(out: &mut Vec<u8>, key: &str, v: usize) {
    ld_head(out, 1, ld_len(key.len()) + ld_len(v));
    ld_head(out, 1, key.len());
    out.extend_from_slice(key.as_bytes());
    ld_head(out, 2, v);
}

/// A `Struct` field whose value is a string.
fn field_str(out: &mut Vec<u8>, key: &str, s: &str) {
    field_head(out, key, ld_len(s.len()));
    ld_head(out, 3, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Appends `RunStreamMessage{sdk_message{type:"assistant", message:{type, agent_id, run_id,
/// message:{role, content:[{type:"text", text}]}}}, offset}` in one pass with no temporaries:
/// this is the hot path of `long:<n>`, written so the double is not the ceiling of a throughput run.
pub fn assistant_proto(out: &mut Vec<u8>, agent_id: &str, run_id: &str, text: &str, offset: Option<u64>) {
    let sv = |s: &str| ld_len(s.len());
    let block = field_len("type", sv("text")) + field_len("text", sv(text));
    let item = ld_len(block); // Value{struct_value: block}
    let list = ld_len(item); // ListValue{values: [item]}
    let inner = field_len("role", sv("assistant")) + field_len("content", ld_len(list));
    let payload = field_len("type", sv("assistant"))
        + field_len("agent_id", sv(agent_id))
        + field_len("run_id", sv(run_id))
        + field_len("message", ld_len(inner));
    let sdk = ld_len("assistant".len()) + ld_len(payload);
    let mut digits = [0u8; 20];
    let off = offset.map(|o| {
        let s = o.to_string();
        let n = s.len();
        digits[..n].copy_from_slice(s.as_bytes());
        n
    });
    ld_head(out, 1, sdk);
    ld_head(out, 1, "assistant".len());
    out.extend_from_slice(b"assistant");
    ld_head(out, 2, payload);
    field_str(out, "type", "assistant");
    field_str(out, "agent_id", agent_id);
    field_str(out, "run_id", run_id);
    field_head(out, "message", ld_len(inner));
    ld_head(out, 5, inner);
    field_str(out, "role", "assistant");
    field_head(out, "content", ld_len(list));
    ld_head(out, 6, list);
    ld_head(out, 1, item);
    ld_head(out, 5, block);
    field_str(out, "type", "text");
    field_str(out, "text", text);
    if let Some(n) = off {
        ld_head(out, 4, n);
        out.extend_from_slice(&digits[..n]);
    }
}

pub enum Mode {
    Send {
        deltas: bool,
        steps: bool,
        drop_after: Option<usize>,
        die_after: Option<usize>,
    },
    Observe {
        after: u64,
    },
}

/// Writes a run's frames to `conn` until `done`, then the end frame. Headers go out with the first frame.
/// Returns Ok(true) if the connection may be reused.
pub fn pump(run: &Run, conn: &mut TcpStream, codec: Codec, mode: Mode) -> std::io::Result<bool> {
    let ka = keepalive_interval();
    let mut idx = 0usize;
    let mut send_offset = 0u64;
    let mut events = 0usize;
    let mut head_sent = false;
    let mut last_write = Instant::now();
    loop {
        let mut frames: Vec<u8> = Vec::new();
        let mut finished = false;
        let mut cut: Option<bool> = None; // Some(false) = drop, Some(true) = die
        {
            let mut st = run.lock();
            loop {
                if idx < st.entries.len() {
                    break;
                }
                let deadline = last_write + ka;
                let now = Instant::now();
                if now >= deadline {
                    let ka_payload: &[u8] = if codec == Codec::Json { b"{}" } else { b"" };
                    push_frame(&mut frames, 0, ka_payload);
                    break;
                }
                st = run
                    .cv
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            while idx < st.entries.len() {
                let e = &st.entries[idx];
                idx += 1;
                match &mode {
                    Mode::Send {
                        deltas,
                        steps,
                        drop_after,
                        die_after,
                    } => {
                        let include = match e.kind {
                            Kind::Request => false,
                            Kind::Delta => *deltas,
                            Kind::Step => *steps,
                            _ => true,
                        };
                        if !include {
                            continue;
                        }
                        if e.kind == Kind::Keepalive {
                            push_frame(&mut frames, 0, if codec == Codec::Json { b"{}" } else { b"" });
                            continue;
                        }
                        send_offset += 1;
                        push_entry_frame(&mut frames, run, e, false, codec, Some(send_offset));
                        events += 1;
                        if e.kind == Kind::Done {
                            finished = true;
                        }
                        if die_after.is_some_and(|k| events >= k) {
                            cut = Some(true);
                            break;
                        }
                        if drop_after.is_some_and(|k| events >= k) {
                            cut = Some(false);
                            break;
                        }
                    }
                    Mode::Observe { after } => {
                        if e.obs_offset == 0 || e.obs_offset <= *after {
                            continue;
                        }
                        push_entry_frame(&mut frames, run, e, true, codec, Some(e.obs_offset));
                        if e.kind == Kind::Done {
                            finished = true;
                        }
                    }
                }
                if finished {
                    break;
                }
                if frames.len() > (1 << 20) {
                    break;
                }
            }
        }
        let mut out = Vec::with_capacity(frames.len() + 256);
        if !head_sent {
            out.extend_from_slice(&http::stream_head(codec.stream_content_type()));
            head_sent = true;
        }
        http::push_chunk(&mut out, &frames);
        if finished && cut.is_none() {
            http::push_chunk(&mut out, &end_frame(None));
            out.extend_from_slice(http::LAST_CHUNK);
        }
        if !out.is_empty() {
            conn.write_all(&out)?;
            conn.flush()?;
            last_write = Instant::now();
        }
        match cut {
            Some(true) => {
                eprintln!("cursor-sdk-bridge-double: die scenario, exiting with code 3");
                std::process::exit(3);
            }
            Some(false) => {
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return Ok(false);
            }
            None => {}
        }
        if finished {
            return Ok(true);
        }
    }
}

/// Writes a stream that consists only of an end frame (errors before any message, auth included).
pub fn write_stream_error(conn: &mut TcpStream, codec: Codec, err: Option<&ConnectError>) -> std::io::Result<()> {
    let mut out = http::stream_head(codec.stream_content_type());
    http::push_chunk(&mut out, &end_frame(err));
    out.extend_from_slice(http::LAST_CHUNK);
    conn.write_all(&out)?;
    conn.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written hot path encodes exactly what the generic JSON → prost path does.
    #[test]
    fn assistant_proto_matches_the_generated_encoder() {
        let long_text = "é".repeat(300); // multi-byte varint lengths at every level
        for (text, offset) in [("t0 ", Some(1)), ("", None), (long_text.as_str(), Some(123_456_789))] {
            let mut ours = Vec::new();
            assistant_proto(&mut ours, "agent-1", "run-1", text, offset);
            let decoded = proto::RunStreamMessage::decode(ours.as_slice()).expect("decodes");
            let mut want: proto::RunStreamMessage = serde_json::from_value(json!({"sdkMessage": {
                "type": "assistant",
                "message": {"type": "assistant", "agent_id": "agent-1", "run_id": "run-1",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}}}))
            .expect("valid");
            want.offset = offset.map(|o| o.to_string());
            assert_eq!(decoded, want);
            assert_eq!(ours.len(), want.encoded_len());
        }
    }
}
