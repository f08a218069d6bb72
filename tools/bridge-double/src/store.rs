//! The agent store: in memory (JSONL-store semantics) or forwarded to the host's `CallStore` callback.

use crate::connect::ConnectError;
use crate::proto::SdkErrorCode;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;

pub enum Store {
    Memory(Mutex<Mem>),
    Custom {
        url: String,
        token: String,
    },
    /// `--local-store {"type":"custom"}` without callback flags.
    Unconfigured,
}

#[derive(Default)]
pub struct Mem {
    agents: HashMap<String, Value>,
    runs: HashMap<String, Value>,
}

impl Store {
    pub fn call(&self, substore: &str, method: &str, input: Value) -> Result<Value, ConnectError> {
        match self {
            Store::Memory(m) => Ok(m.lock().unwrap_or_else(|e| e.into_inner()).call(substore, method, &input)),
            Store::Unconfigured => Err(ConnectError::new(
                "internal",
                "[failed_precondition] Store callbacks are not configured on this bridge (set CURSOR_SDK_STORE_CALLBACK_URL and CURSOR_SDK_STORE_CALLBACK_AUTH_TOKEN)",
            )),
            Store::Custom { url, token } => {
                let body = serde_json::to_vec(&json!({"substore": substore, "method": method, "input": input}))
                    .expect("json");
                let resp = crate::http::post_connect_json(url, "/sdk.v1.SdkStoreCallbackService/CallStore", token, &body)
                    .map_err(|e| {
                        let u = crate::http::parse_url(url).map(|u| u.host_port).unwrap_or_default();
                        if e.kind() == std::io::ErrorKind::ConnectionRefused {
                            ConnectError::new("internal", format!("[unavailable] connect ECONNREFUSED {u}"))
                        } else {
                            ConnectError::new("internal", format!("[unavailable] {e}"))
                        }
                    })?;
                let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
                if resp.status != 200 {
                    let code = v.get("code").and_then(Value::as_str).unwrap_or("unknown").to_string();
                    let msg = v.get("message").and_then(Value::as_str).unwrap_or("").to_string();
                    let text = format!("[{code}] {msg}");
                    return Err(match code.as_str() {
                        "not_found" => ConnectError::detailed("not_found", text, SdkErrorCode::Unspecified),
                        "unauthenticated" => ConnectError::detailed("unauthenticated", text, SdkErrorCode::Unauthorized),
                        _ => ConnectError::new("internal", text),
                    });
                }
                Ok(v.get("output").cloned().unwrap_or(Value::Null))
            }
        }
    }
}

fn num(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

impl Mem {
    fn call(&mut self, substore: &str, method: &str, input: &Value) -> Value {
        let ids = |f: &str| -> Vec<String> {
            input["filter"][f]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default()
        };
        match (substore, method) {
            ("agents", "get") => self
                .agents
                .get(input["agentId"].as_str().unwrap_or(""))
                .cloned()
                .unwrap_or(Value::Null),
            ("agents", "create") | ("agents", "update") => {
                let a = input["agent"].clone();
                let id = a["agentId"].as_str().unwrap_or("").to_string();
                self.agents.insert(id, a.clone());
                a
            }
            ("agents", "delete") => {
                for id in ids("agentIds") {
                    self.agents.remove(&id);
                }
                Value::Null
            }
            ("agents", "list") => {
                let cwd = input["filter"]["cwd"].as_str();
                let mut items: Vec<Value> = self
                    .agents
                    .values()
                    .filter(|a| cwd.is_none_or(|c| a["cwd"].as_str() == Some(c)))
                    .cloned()
                    .collect();
                items.sort_by(|a, b| {
                    num(b, "updatedAt")
                        .cmp(&num(a, "updatedAt"))
                        .then_with(|| b["agentId"].as_str().cmp(&a["agentId"].as_str()))
                });
                json!({"items": items})
            }
            ("runs", "create") | ("runs", "update") => {
                let r = input["run"].clone();
                self.runs
                    .insert(r["runId"].as_str().unwrap_or("").to_string(), r.clone());
                r
            }
            ("runs", "get") => self
                .runs
                .get(input["runId"].as_str().unwrap_or(""))
                .cloned()
                .unwrap_or(Value::Null),
            ("runs", "list") => {
                let want = ids("agentIds");
                let mut items: Vec<Value> = self
                    .runs
                    .values()
                    .filter(|r| want.is_empty() || want.iter().any(|w| r["agentId"].as_str() == Some(w)))
                    .cloned()
                    .collect();
                items.sort_by_key(|r| num(r, "turnNumber"));
                json!({"items": items})
            }
            ("runs", "delete") => {
                let want = ids("agentIds");
                self.runs
                    .retain(|_, r| !want.iter().any(|w| r["agentId"].as_str() == Some(w)));
                Value::Null
            }
            ("runEvents", "list") => json!({"items": []}),
            _ => Value::Null,
        }
    }
}
