//! Routing, auth and every RPC of the three bridge services.

use crate::connect::{unenvelope, Codec, ConnectError};
use crate::http::{self, Request};
use crate::proto::{self, SdkErrorCode as E};
use crate::runs::{self, timestamp, Kind, Mode, Payload, Run};
use crate::store::Store;
use crate::util;
use prost::Message;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const CAPABILITIES: [&str; 10] = [
    "agent.create",
    "agent.resume",
    "agent.send",
    "run.observe",
    "run.wait",
    "run.cancel",
    "agent.management",
    "cursor.catalog",
    "artifacts.chunked",
    "agent.usage",
];

pub const ARTIFACT_PATH: &str = "artifacts/report.txt";

pub fn artifact_bytes() -> Vec<u8> {
    (0..100_000u32)
        .map(|i| b"double artifact\n"[(i % 16) as usize])
        .collect()
}

pub struct LiveAgent {
    pub model: Option<proto::ModelSelection>,
    pub custom_tools: Vec<String>,
    pub queued_run: Option<String>,
    pub active_run: Option<String>,
}

pub struct Svc {
    pub token: String,
    pub workspace: String,
    pub store: Store,
    pub tool_callback: Mutex<Option<(String, String)>>,
    pub live: Mutex<HashMap<String, LiveAgent>>,
    pub runs: Mutex<HashMap<String, Arc<Run>>>,
    pub agent_runs: Mutex<HashMap<String, Vec<String>>>,
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Unary,
    Stream,
}

fn route(path: &str) -> Option<(&'static str, Shape)> {
    const ROUTES: &[(&str, Shape)] = &[
        ("SdkBridgeControlService/Ping", Shape::Unary),
        ("SdkBridgeControlService/Shutdown", Shape::Unary),
        ("SdkBridgeControlService/GetVersion", Shape::Unary),
        ("SdkBridgeControlService/SetToolCallback", Shape::Unary),
        ("SdkCursorService/Me", Shape::Unary),
        ("SdkCursorService/ListModels", Shape::Unary),
        ("SdkCursorService/ListRepositories", Shape::Unary),
        ("SdkAgentService/CreateAgent", Shape::Unary),
        ("SdkAgentService/ResumeAgent", Shape::Unary),
        ("SdkAgentService/ReloadAgent", Shape::Unary),
        ("SdkAgentService/CloseAgent", Shape::Unary),
        ("SdkAgentService/Send", Shape::Stream),
        ("SdkAgentService/WaitLiveRun", Shape::Unary),
        ("SdkAgentService/GetRun", Shape::Unary),
        ("SdkAgentService/ListRuns", Shape::Unary),
        ("SdkAgentService/GetRunConversation", Shape::Unary),
        ("SdkAgentService/ObserveRun", Shape::Stream),
        ("SdkAgentService/CancelRun", Shape::Unary),
        ("SdkAgentService/GetAgent", Shape::Unary),
        ("SdkAgentService/ListAgents", Shape::Unary),
        ("SdkAgentService/ArchiveAgent", Shape::Unary),
        ("SdkAgentService/UnarchiveAgent", Shape::Unary),
        ("SdkAgentService/DeleteAgent", Shape::Unary),
        ("SdkAgentService/ListAgentMessages", Shape::Unary),
        ("SdkAgentService/ListArtifacts", Shape::Unary),
        ("SdkAgentService/DownloadArtifact", Shape::Stream),
        ("SdkAgentService/GetUsage", Shape::Unary),
    ];
    let p = path.split('?').next()?.strip_prefix("/sdk.v1.")?;
    ROUTES.iter().find(|(r, _)| *r == p).map(|(r, s)| (*r, *s))
}

/// Constant-time comparison of the `Authorization` header with `Bearer <token>`.
fn authorized(req: &Request, token: &str) -> bool {
    let Some(h) = req.header("authorization") else {
        return false;
    };
    let want = format!("Bearer {token}");
    let (a, b) = (h.as_bytes(), want.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unary<Req, Resp>(
    codec: Codec,
    body: &[u8],
    name: &str,
    f: impl FnOnce(Req) -> Result<Resp, ConnectError>,
) -> Result<Vec<u8>, ConnectError>
where
    Req: Message + Default + DeserializeOwned,
    Resp: Message + Serialize,
{
    let req = codec.decode::<Req>(body, name)?;
    Ok(codec.encode(&f(req)?))
}

fn agent_not_found(id: &str) -> ConnectError {
    ConnectError::detailed("not_found", format!("Agent {id} not found"), E::AgentNotFound)
}
fn agent_not_found_500(id: &str) -> ConnectError {
    ConnectError::detailed("internal", format!("Agent {id} not found"), E::Unspecified)
}
fn unknown_agent(id: &str) -> ConnectError {
    ConnectError::new("not_found", format!("Unknown agent: {id}"))
}
fn run_not_found(id: &str) -> ConnectError {
    ConnectError::detailed("invalid_argument", format!("Run {id} not found"), E::Unspecified)
}
fn unknown_run(id: &str) -> ConnectError {
    ConnectError::new("not_found", format!("Unknown run: {id}"))
}

fn ms(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn agent_info(rec: &Value) -> proto::SdkAgentInfo {
    let status = rec["status"].as_str().unwrap_or("idle");
    proto::SdkAgentInfo {
        agent_id: rec["agentId"].as_str().unwrap_or("").into(),
        name: rec["name"].as_str().unwrap_or("").into(),
        summary: String::new(),
        last_modified: Some(timestamp(ms(rec, "updatedAt"))),
        status: match status {
            "running" => proto::AgentInfoStatus::Running as i32,
            "error" => proto::AgentInfoStatus::Error as i32,
            "archived" => proto::AgentInfoStatus::Unspecified as i32,
            _ => proto::AgentInfoStatus::Finished as i32,
        },
        created_at: Some(timestamp(ms(rec, "createdAt"))),
        archived: status == "archived",
        runtime_info: Some(proto::sdk_agent_info::RuntimeInfo::Local(proto::LocalAgentInfo {
            cwd: rec["cwd"].as_str().unwrap_or("").into(),
        })),
    }
}

fn catalog() -> Option<Vec<String>> {
    let raw = std::env::var("CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON").ok()?;
    let v: Value = serde_json::from_str(&raw).ok()?;
    Some(
        v.as_array()?
            .iter()
            .filter_map(|m| m["id"].as_str().map(String::from))
            .collect(),
    )
}

fn check_model(m: &Option<proto::ModelSelection>) -> Result<(), ConnectError> {
    if let (Some(m), Some(cat)) = (m, catalog()) {
        if !cat.contains(&m.id) {
            return Err(ConnectError::detailed(
                "invalid_argument",
                format!(
                    "Cannot use this model: {}. Available models: {}. Use Cursor.models.list() to discover valid selections.",
                    m.id,
                    cat.join(", ")
                ),
                E::InvalidModel,
            ));
        }
    }
    Ok(())
}

impl Svc {
    /// Handles one request; returns whether the connection may be kept alive.
    pub fn handle(self: &Arc<Self>, req: Request, conn: &mut TcpStream) -> std::io::Result<bool> {
        let Some((name, shape)) = route(&req.path) else {
            http::write_empty(conn, 404)?;
            return Ok(req.keep_alive);
        };
        if req.method != "POST" {
            http::write_empty(conn, 405)?;
            return Ok(req.keep_alive);
        }
        let Some(codec) = Codec::from_content_type(req.header("content-type"), shape == Shape::Stream) else {
            http::write_empty(conn, 415)?;
            return Ok(req.keep_alive);
        };
        let authed = authorized(&req, &self.token);
        if shape == Shape::Stream {
            if !authed {
                runs::write_stream_error(conn, codec, Some(&ConnectError::new("unauthenticated", "Unauthorized")))?;
                return Ok(req.keep_alive);
            }
            return self
                .stream(name, codec, &req.body, conn)
                .map(|reuse| reuse && req.keep_alive);
        }
        let result = if authed {
            self.unary(name, codec, &req.body)
        } else {
            Err(ConnectError::new("unauthenticated", "Unauthorized"))
        };
        match result {
            Ok(body) => http::write_full(conn, 200, codec.unary_content_type(), &body)?,
            Err(e) => {
                let body = serde_json::to_vec(&e.to_json()).expect("json");
                http::write_full(conn, e.http_status(), "application/json", &body)?
            }
        }
        if name.ends_with("/Shutdown") && authed {
            crate::shutdown_soon(&req.body, codec);
        }
        Ok(req.keep_alive)
    }

    fn unary(self: &Arc<Self>, name: &str, c: Codec, b: &[u8]) -> Result<Vec<u8>, ConnectError> {
        use proto::*;
        match name {
            "SdkBridgeControlService/Ping" => unary(c, b, "sdk.v1.PingRequest", |_: PingRequest| {
                Ok(PingResponse { message: "pong".into() })
            }),
            "SdkBridgeControlService/Shutdown" => unary(c, b, "sdk.v1.ShutdownRequest", |_: ShutdownRequest| {
                Ok(ShutdownResponse {})
            }),
            "SdkBridgeControlService/GetVersion" => unary(c, b, "sdk.v1.GetVersionRequest", |_: GetVersionRequest| {
                Ok(GetVersionResponse {
                    bridge_version: "1.0.0-double".into(),
                    protocol_version: "sdk.v1".into(),
                    capabilities: CAPABILITIES.iter().map(|s| s.to_string()).collect(),
                })
            }),
            "SdkBridgeControlService/SetToolCallback" => {
                unary(c, b, "sdk.v1.SetToolCallbackRequest", |r: SetToolCallbackRequest| {
                    let mut cb = self.tool_callback.lock().unwrap_or_else(|e| e.into_inner());
                    if r.url.is_empty() {
                        *cb = None;
                    } else if r.auth_token.is_empty() {
                        return Err(ConnectError::new(
                            "invalid_argument",
                            "SetToolCallback requires an auth_token when url is set.",
                        ));
                    } else {
                        *cb = Some((r.url, r.auth_token));
                    }
                    Ok(SetToolCallbackResponse {})
                })
            }
            "SdkCursorService/Me" => unary(c, b, "sdk.v1.MeRequest", |r: MeRequest| {
                need_key(r.options)?;
                Ok(MeResponse {
                    user: Some(SdkUser {
                        api_key_name: "double-key".into(),
                        user_id: 4242,
                        user_email: "double@example.invalid".into(),
                        user_first_name: "Bridge".into(),
                        user_last_name: "Double".into(),
                        created_at: "2026-01-01T00:00:00.000Z".into(),
                    }),
                })
            }),
            "SdkCursorService/ListModels" => unary(c, b, "sdk.v1.ListModelsRequest", |r: ListModelsRequest| {
                need_key(r.options)?;
                let ids = catalog().unwrap_or_else(|| vec!["composer-2".into(), "double-fast".into()]);
                Ok(ListModelsResponse {
                    items: ids
                        .into_iter()
                        .map(|id| SdkModel {
                            display_name: format!("{id} (double)"),
                            description: "A model served by cursor-sdk-bridge-double".into(),
                            id,
                            ..Default::default()
                        })
                        .collect(),
                })
            }),
            "SdkCursorService/ListRepositories" => {
                unary(c, b, "sdk.v1.ListRepositoriesRequest", |r: ListRepositoriesRequest| {
                    need_key(r.options)?;
                    Ok(ListRepositoriesResponse {
                        items: vec![SdkRepository {
                            url: "https://github.com/cursor/bridge-double-fixture".into(),
                        }],
                    })
                })
            }
            "SdkAgentService/CreateAgent" => unary(c, b, "sdk.v1.CreateAgentRequest", |r| self.create_agent(r)),
            "SdkAgentService/ResumeAgent" => unary(c, b, "sdk.v1.ResumeAgentRequest", |r| self.resume_agent(r)),
            "SdkAgentService/ReloadAgent" => unary(c, b, "sdk.v1.ReloadAgentRequest", |r: ReloadAgentRequest| {
                self.live_get(&r.agent_id).map(|_| ReloadAgentResponse {})
            }),
            "SdkAgentService/CloseAgent" => unary(c, b, "sdk.v1.CloseAgentRequest", |r: CloseAgentRequest| {
                let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
                live.remove(&r.agent_id)
                    .map(|_| CloseAgentResponse {})
                    .ok_or_else(|| unknown_agent(&r.agent_id))
            }),
            "SdkAgentService/WaitLiveRun" => unary(c, b, "sdk.v1.WaitLiveRunRequest", |r: WaitLiveRunRequest| {
                let run = self.run(&r.run_id).ok_or_else(|| unknown_run(&r.run_id))?;
                if !run.lock().started {
                    return Err(ConnectError::new("internal", "Cannot wait on a detached running run"));
                }
                Ok(WaitLiveRunResponse {
                    result: Some(run.wait()),
                })
            }),
            "SdkAgentService/GetRun" => unary(c, b, "sdk.v1.GetRunRequest", |r: GetRunRequest| {
                let o = r.options.unwrap_or_default();
                if o.runtime == Runtime::Cloud as i32 && o.agent_id.is_empty() {
                    return Err(ConnectError::detailed(
                        "invalid_argument",
                        "Cloud getRun requests require agentId",
                        E::Unspecified,
                    ));
                }
                let run = self.run(&r.run_id).ok_or_else(|| run_not_found(&r.run_id))?;
                self.scoped(&run.agent_id, &o.cwd)?
                    .ok_or_else(|| run_not_found(&r.run_id))?;
                Ok(GetRunResponse {
                    run: Some(run.snapshot()),
                })
            }),
            "SdkAgentService/ListRuns" => unary(c, b, "sdk.v1.ListRunsRequest", |r: ListRunsRequest| {
                let o = r.options.unwrap_or_default();
                self.scoped(&r.agent_id, &o.cwd)?
                    .ok_or_else(|| agent_not_found(&r.agent_id))?;
                self.scoped(&r.agent_id, &o.cwd)?;
                if matches!(self.store, Store::Custom { .. }) {
                    self.store
                        .call("runs", "list", json!({"filter": {"agentIds": [r.agent_id]}}))?;
                }
                let ids = self
                    .agent_runs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&r.agent_id)
                    .cloned();
                let items = ids
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|id| self.run(id))
                    .map(|r| r.snapshot())
                    .collect();
                Ok(ListRunsResponse {
                    items,
                    next_cursor: String::new(),
                })
            }),
            "SdkAgentService/GetRunConversation" => unary(
                c,
                b,
                "sdk.v1.GetRunConversationRequest",
                |r: GetRunConversationRequest| {
                    let run = self.run(&r.run_id).ok_or_else(|| unknown_run(&r.run_id))?;
                    let st = run.lock();
                    let conv = if st.started {
                        json!([{"agentConversationTurn": {"userMessage": {"text": st.user_text},
                            "steps": [{"assistantMessage": {"text": st.assistant_text}}]}}])
                    } else {
                        json!([])
                    };
                    Ok(GetRunConversationResponse {
                        conversation_json: conv.to_string(),
                    })
                },
            ),
            "SdkAgentService/CancelRun" => unary(c, b, "sdk.v1.CancelRunRequest", |r: CancelRunRequest| {
                let run = self.run(&r.run_id).ok_or_else(|| run_not_found(&r.run_id))?;
                if run.lock().started {
                    self.cancel(&run);
                }
                Ok(CancelRunResponse {})
            }),
            "SdkAgentService/GetAgent" => unary(c, b, "sdk.v1.GetAgentRequest", |r: GetAgentRequest| {
                let o = r.options.unwrap_or_default();
                let rec = self
                    .scoped(&r.agent_id, &o.cwd)?
                    .ok_or_else(|| agent_not_found(&r.agent_id))?;
                Ok(GetAgentResponse {
                    agent: Some(agent_info(&rec)),
                })
            }),
            "SdkAgentService/ListAgents" => unary(c, b, "sdk.v1.ListAgentsRequest", |r| self.list_agents(r)),
            "SdkAgentService/ArchiveAgent" => unary(c, b, "sdk.v1.ArchiveAgentRequest", |r: ArchiveAgentRequest| {
                let o = r.options.unwrap_or_default();
                self.set_status(&r.agent_id, &o.cwd, "archived")
                    .map(|_| ArchiveAgentResponse {})
            }),
            "SdkAgentService/UnarchiveAgent" => {
                unary(c, b, "sdk.v1.UnarchiveAgentRequest", |r: UnarchiveAgentRequest| {
                    let o = r.options.unwrap_or_default();
                    self.set_status(&r.agent_id, &o.cwd, "idle")
                        .map(|_| UnarchiveAgentResponse {})
                })
            }
            "SdkAgentService/DeleteAgent" => unary(c, b, "sdk.v1.DeleteAgentRequest", |r| self.delete_agent(r)),
            "SdkAgentService/ListAgentMessages" => unary(
                c,
                b,
                "sdk.v1.ListAgentMessagesRequest",
                |r: ListAgentMessagesRequest| {
                    let ids = self
                        .agent_runs
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&r.agent_id)
                        .cloned();
                    let mut messages = Vec::new();
                    for run in ids.unwrap_or_default().iter().filter_map(|id| self.run(id)) {
                        let st = run.lock();
                        if !st.complete {
                            continue;
                        }
                        let user = json!({"role": "user", "content": [{"type": "text", "text": st.user_text}]});
                        let asst =
                            json!({"role": "assistant", "content": [{"type": "text", "text": st.assistant_text}]});
                        for (ty, m) in [("user", user), ("assistant", asst)] {
                            messages.push(AgentMessage {
                                r#type: ty.into(),
                                uuid: util::uuid_v4(),
                                agent_id: r.agent_id.clone(),
                                message: Some(runs::pb_struct(&m)),
                            });
                        }
                    }
                    Ok(ListAgentMessagesResponse { messages })
                },
            ),
            "SdkAgentService/ListArtifacts" => unary(c, b, "sdk.v1.ListArtifactsRequest", |r: ListArtifactsRequest| {
                self.live_get(&r.agent_id)?;
                Ok(ListArtifactsResponse {
                    artifacts: vec![SdkArtifact {
                        path: ARTIFACT_PATH.into(),
                        size_bytes: artifact_bytes().len() as u64,
                        updated_at: "2026-01-01T00:00:00.000Z".into(),
                    }],
                })
            }),
            "SdkAgentService/GetUsage" => unary(c, b, "sdk.v1.GetUsageRequest", |r: GetUsageRequest| {
                self.live_get(&r.agent_id)?;
                let ids = self
                    .agent_runs
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&r.agent_id)
                    .cloned();
                let mut total = TokenUsage::default();
                let mut per = Vec::new();
                for run in ids.unwrap_or_default().iter().filter_map(|id| self.run(id)) {
                    if r.run_id.as_ref().is_some_and(|x| *x != run.id) {
                        continue;
                    }
                    if let Some(u) = run.lock().usage {
                        total.input_tokens += u.input_tokens;
                        total.output_tokens += u.output_tokens;
                        total.cache_read_tokens += u.cache_read_tokens;
                        total.cache_write_tokens += u.cache_write_tokens;
                        total.total_tokens += u.total_tokens;
                        per.push(RunUsage {
                            run_id: run.id.clone(),
                            usage: Some(u),
                            cost: None,
                        });
                    }
                }
                Ok(GetUsageResponse {
                    usage: Some(AgentUsage {
                        usage: Some(total),
                        cost: None,
                        runs: per,
                    }),
                })
            }),
            _ => Err(ConnectError::new(
                "unimplemented",
                format!("{name} is not implemented by the double"),
            )),
        }
    }

    fn run(&self, id: &str) -> Option<Arc<Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    fn live_get(&self, id: &str) -> Result<(Option<proto::ModelSelection>, Vec<String>), ConnectError> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.get(id)
            .map(|a| (a.model.clone(), a.custom_tools.clone()))
            .ok_or_else(|| unknown_agent(id))
    }

    /// The agent record if it exists and its cwd matches `cwd` (or the launch workspace when empty).
    fn scoped(&self, id: &str, cwd: &str) -> Result<Option<Value>, ConnectError> {
        let rec = self.store.call("agents", "get", json!({"agentId": id}))?;
        let want = if cwd.is_empty() { self.workspace.as_str() } else { cwd };
        Ok(if rec.is_object() && rec["cwd"].as_str() == Some(want) {
            Some(rec)
        } else {
            None
        })
    }

    fn create_agent(&self, r: proto::CreateAgentRequest) -> Result<proto::CreateAgentResponse, ConnectError> {
        if r.idempotency_key.is_some() {
            return Err(ConnectError::new(
                "unimplemented",
                "Idempotency-Key is only supported for cloud CreateAgent in v1",
            ));
        }
        let o = r.options.unwrap_or_default();
        let local = o.local.clone().unwrap_or_default();
        let tools: Vec<String> = local.custom_tools.keys().cloned().collect();
        if o.cloud.is_some() {
            if !tools.is_empty() {
                return Err(ConnectError::new(
                    "invalid_argument",
                    "local.custom_tools is only supported for local SDK agents",
                ));
            }
            let id = format!("bc-{}", util::uuid_v4());
            self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(
                id.clone(),
                LiveAgent {
                    model: o.model.clone(),
                    custom_tools: vec![],
                    queued_run: None,
                    active_run: None,
                },
            );
            return Ok(proto::CreateAgentResponse {
                agent_id: id,
                model: o.model,
            });
        }
        if !tools.is_empty() && self.tool_callback.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            return Err(ConnectError::new(
                "failed_precondition",
                "local.custom_tools requires a host tool callback server (--tool-callback-url / --tool-callback-auth-token)",
            ));
        }
        check_model(&o.model)?;
        let id = if !o.agent_id.is_empty() {
            o.agent_id.clone()
        } else if !tools.is_empty() {
            util::uuid_v4()
        } else {
            format!("agent-{}", util::uuid_v4())
        };
        let cwd = local.cwd.first().cloned().unwrap_or_else(|| self.workspace.clone());
        let now = util::now_ms();
        let name = if o.name.is_empty() {
            "New Agent".to_string()
        } else {
            o.name.clone()
        };
        let mut agent = json!({"agentId": id, "cwd": cwd, "status": "idle", "activeRunId": null, "name": name,
            "createdAt": now, "updatedAt": now});
        let run_id = format!("run-{}", util::uuid_v4());
        self.store.call("agents", "get", json!({"agentId": id}))?;
        self.store.call("agents", "create", json!({"agent": agent}))?;
        self.store.call(
            "runs",
            "create",
            json!({"run": {"runId": run_id, "requestId": null, "agentId": id,
            "turnNumber": 1, "status": "queued", "model": o.model.as_ref().map(|m| json!({"id": m.id})),
            "result": null, "error": null, "usageRef": null, "usage": null, "createdAt": now, "updatedAt": now,
            "startedAt": null, "endedAt": null, "startCheckpointRef": null, "latestCheckpointRef": null}}),
        )?;
        agent["activeRunId"] = json!(run_id);
        self.store.call("agents", "update", json!({"agent": agent}))?;
        self.store.call("agents", "get", json!({"agentId": id}))?;
        let run = Arc::new(Run::new(run_id.clone(), id.clone(), o.model.clone()));
        self.runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run_id.clone(), run);
        self.agent_runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), vec![run_id.clone()]);
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(
            id.clone(),
            LiveAgent {
                model: o.model.clone(),
                custom_tools: tools,
                queued_run: Some(run_id),
                active_run: None,
            },
        );
        Ok(proto::CreateAgentResponse {
            agent_id: id,
            model: o.model,
        })
    }

    fn resume_agent(&self, r: proto::ResumeAgentRequest) -> Result<proto::ResumeAgentResponse, ConnectError> {
        let o = r.options.unwrap_or_default();
        let cwd = o
            .local
            .as_ref()
            .and_then(|l| l.cwd.first().cloned())
            .unwrap_or_default();
        self.scoped(&r.agent_id, &cwd)?
            .ok_or_else(|| agent_not_found(&r.agent_id))?;
        check_model(&o.model)?;
        let tools: Vec<String> = o
            .local
            .as_ref()
            .map(|l| l.custom_tools.keys().cloned().collect())
            .unwrap_or_default();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let e = live.entry(r.agent_id.clone()).or_insert(LiveAgent {
            model: None,
            custom_tools: vec![],
            queued_run: None,
            active_run: None,
        });
        if o.model.is_some() {
            e.model = o.model.clone();
        }
        if !tools.is_empty() {
            e.custom_tools = tools;
        }
        Ok(proto::ResumeAgentResponse {
            agent_id: r.agent_id,
            model: e.model.clone(),
        })
    }

    fn list_agents(&self, r: proto::ListAgentsRequest) -> Result<proto::ListAgentsResponse, ConnectError> {
        let o = r.options.unwrap_or_default();
        let cwd = if o.cwd.is_empty() {
            self.workspace.clone()
        } else {
            o.cwd.clone()
        };
        let out = self.store.call("agents", "list", json!({"filter": {"cwd": cwd}}))?;
        let items: Vec<Value> = out["items"].as_array().cloned().unwrap_or_default();
        let mut start = 0;
        if !o.cursor.is_empty() {
            let cur: Value = util::b64url_decode(&o.cursor)
                .and_then(|b| serde_json::from_slice(&b).ok())
                .ok_or_else(|| ConnectError::detailed("internal", "Invalid list cursor", E::Unspecified))?;
            let id = cur["agentId"].as_str().unwrap_or("");
            start = items
                .iter()
                .position(|a| a["agentId"].as_str() == Some(id))
                .map(|p| p + 1)
                .unwrap_or(items.len());
        }
        let limit = if o.limit == 0 { usize::MAX } else { o.limit as usize };
        let page: Vec<&Value> = items.iter().skip(start).take(limit).collect();
        let next_cursor = if start + page.len() < items.len() {
            let last = page.last().expect("non-empty page");
            util::b64url(
                json!({"updatedAt": last["updatedAt"], "agentId": last["agentId"]})
                    .to_string()
                    .as_bytes(),
            )
        } else {
            String::new()
        };
        Ok(proto::ListAgentsResponse {
            items: page.into_iter().map(agent_info).collect(),
            next_cursor,
        })
    }

    fn set_status(&self, id: &str, cwd: &str, status: &str) -> Result<(), ConnectError> {
        let mut rec = self.scoped(id, cwd)?.ok_or_else(|| agent_not_found_500(id))?;
        rec["status"] = json!(status);
        rec["updatedAt"] = json!(util::now_ms());
        self.store.call("agents", "update", json!({"agent": rec}))?;
        Ok(())
    }

    fn delete_agent(&self, r: proto::DeleteAgentRequest) -> Result<proto::DeleteAgentResponse, ConnectError> {
        let o = r.options.unwrap_or_default();
        let id = r.agent_id;
        self.scoped(&id, &o.cwd)?.ok_or_else(|| agent_not_found_500(&id))?;
        let filter = json!({"filter": {"agentIds": [id]}});
        self.store.call("runs", "list", filter.clone())?;
        let active = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .and_then(|a| a.active_run.clone());
        if let Some(run) = active.and_then(|rid| self.run(&rid)).filter(|r| !r.is_complete()) {
            return Err(ConnectError::detailed(
                "internal",
                format!(
                    "Cannot delete agent {id}: active run {} is not terminal. Call run.cancel() first.",
                    run.id
                ),
                E::Unspecified,
            ));
        }
        self.store.call("agents", "get", json!({"agentId": id}))?;
        self.store.call("runs", "list", filter.clone())?;
        let run_ids = self
            .agent_runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
            .unwrap_or_default();
        self.store.call("runs", "delete", filter.clone())?;
        self.store
            .call("runEvents", "delete", json!({"filter": {"runIds": run_ids}}))?;
        self.store.call("checkpoints", "delete", filter.clone())?;
        self.store.call("agents", "delete", filter)?;
        self.store
            .call("runEvents", "delete", json!({"filter": {"runIds": run_ids}}))?;
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        for rid in run_ids {
            runs.remove(&rid);
        }
        Ok(proto::DeleteAgentResponse {})
    }

    fn cancel(&self, run: &Arc<Run>) {
        let mut r = proto::RunResult {
            run_id: run.id.clone(),
            agent_id: run.agent_id.clone(),
            status: proto::RunLifecycleStatus::Cancelled as i32,
            model: run.model.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            created_at: Some(timestamp(run.created_ms)),
            ..Default::default()
        };
        r.duration_ms = util::now_ms().saturating_sub(run.created_ms);
        let status = json!({"type": "status", "agent_id": run.agent_id, "run_id": run.id, "status": "CANCELLED"});
        if run.complete(Some(status), r.clone(), r, None) {
            self.run_ended(run);
        }
    }

    /// Store bookkeeping once a run is terminal.
    pub fn run_ended(&self, run: &Run) {
        let status = match run.lock().status {
            proto::RunLifecycleStatus::Finished => "finished",
            proto::RunLifecycleStatus::Cancelled => "cancelled",
            _ => "error",
        };
        if let Some(a) = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&run.agent_id)
        {
            if a.active_run.as_deref() == Some(&run.id) {
                a.active_run = None;
            }
        }
        if let Ok(mut rec) = self.store.call("agents", "get", json!({"agentId": run.agent_id})) {
            if rec.is_object() {
                if rec["status"] != "archived" {
                    rec["status"] = json!(status);
                }
                rec["activeRunId"] = Value::Null;
                rec["updatedAt"] = json!(util::now_ms());
                let _ = self.store.call("agents", "update", json!({"agent": rec}));
            }
        }
    }

    fn stream(self: &Arc<Self>, name: &str, codec: Codec, body: &[u8], conn: &mut TcpStream) -> std::io::Result<bool> {
        let res = match name {
            "SdkAgentService/Send" => self.send(codec, body),
            "SdkAgentService/ObserveRun" => self.observe(codec, body),
            "SdkAgentService/DownloadArtifact" => return self.download(codec, body, conn),
            _ => Err(ConnectError::new("unimplemented", "unknown stream")),
        };
        match res {
            Err(e) => runs::write_stream_error(conn, codec, Some(&e)).map(|_| true),
            Ok((run, mode)) => runs::pump(&run, conn, codec, mode),
        }
    }

    fn send(self: &Arc<Self>, codec: Codec, body: &[u8]) -> Result<(Arc<Run>, Mode), ConnectError> {
        let r: proto::SendRequest = codec.decode(unenvelope(body)?, "sdk.v1.SendRequest")?;
        let id = r.agent_id.clone();
        let (agent_model, tools) = self.live_get(&id)?;
        if id.starts_with("bc-") {
            return Err(ConnectError::detailed(
                "internal",
                "Network request failed",
                E::Unspecified,
            ));
        }
        let rec = self.store.call("agents", "get", json!({"agentId": id}))?;
        if !rec.is_object() {
            return Err(agent_not_found_500(&id));
        }
        if rec["status"] == "archived" {
            return Err(ConnectError::detailed(
                "internal",
                format!("Cannot create follow-up run on archived agent {id}. Unarchive it first."),
                E::Unspecified,
            ));
        }
        if r.idempotency_key.is_some() {
            return Err(ConnectError::new(
                "unimplemented",
                "Idempotency-Key is only supported for cloud agents in v1",
            ));
        }
        let msg = r.message.unwrap_or_default();
        if msg
            .images
            .iter()
            .any(|i| matches!(i.source, Some(proto::sdk_image::Source::Url(_))))
        {
            return Err(ConnectError::detailed(
                "invalid_argument",
                "URL images are only supported for cloud-routed agents",
                E::Unspecified,
            ));
        }
        let opts = r.options.unwrap_or_default();
        let model = opts.model.clone().or(agent_model);
        if model.is_none() {
            return Err(ConnectError::detailed(
                "invalid_argument",
                "Local SDK agents require an explicit `model`. Pass `model: { id: \"<model-id>\" }` to Agent.create() or to send(), or run this agent in cloud mode.",
                E::Unspecified,
            ));
        }
        check_model(&model)?;
        let run = {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let a = live.get_mut(&id).ok_or_else(|| unknown_agent(&id))?;
            if let Some(active) = a.active_run.as_ref().and_then(|rid| self.run(rid)) {
                if !active.is_complete() {
                    return Err(ConnectError::new(
                        "internal",
                        format!("Agent {id} already has active run"),
                    ));
                }
            }
            let run = match a.queued_run.take().and_then(|rid| self.run(&rid)) {
                Some(r) => r,
                None => {
                    let mut ar = self.agent_runs.lock().unwrap_or_else(|e| e.into_inner());
                    let list = ar.entry(id.clone()).or_default();
                    let run = Arc::new(Run::new(format!("run-{}", util::uuid_v4()), id.clone(), None));
                    list.push(run.id.clone());
                    self.runs
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(run.id.clone(), run.clone());
                    run
                }
            };
            a.active_run = Some(run.id.clone());
            run
        };
        *run.model.lock().unwrap_or_else(|e| e.into_inner()) = model;
        {
            let mut st = run.lock();
            st.started = true;
            st.user_text = msg.text.clone();
        }
        run.push(vec![(
            Kind::Request,
            Payload::Json(json!({"sdkMessage": {"type": "request", "message": {"type": "request",
                "agent_id": id, "run_id": run.id, "request_id": format!("req-{}", util::uuid_v4())}}})),
        )]);
        let mut rec = rec;
        rec["status"] = json!("running");
        rec["activeRunId"] = json!(run.id);
        rec["updatedAt"] = json!(util::now_ms());
        let _ = self.store.call("agents", "update", json!({"agent": rec}));

        let (scenario, arg) = crate::scenarios::pick(&msg.text);
        let k = arg.as_deref().and_then(|a| a.parse::<usize>().ok());
        let mode = Mode::Send {
            deltas: opts.enable_deltas,
            steps: opts.enable_steps,
            drop_after: if scenario == "drop" { Some(k.unwrap_or(3)) } else { None },
            die_after: if scenario == "die" { Some(k.unwrap_or(3)) } else { None },
        };
        let ctx = crate::scenarios::Ctx {
            run: run.clone(),
            scenario,
            arg,
            tool_callback: self.tool_callback.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            custom_tools: tools,
            started: Instant::now(),
        };
        let svc = self.clone();
        let r2 = run.clone();
        std::thread::spawn(move || {
            crate::scenarios::run(ctx);
            svc.run_ended(&r2);
        });
        Ok((run, mode))
    }

    fn observe(&self, codec: Codec, body: &[u8]) -> Result<(Arc<Run>, Mode), ConnectError> {
        let r: proto::ObserveRunRequest = codec.decode(unenvelope(body)?, "sdk.v1.ObserveRunRequest")?;
        let run = self.run(&r.run_id).ok_or_else(|| run_not_found(&r.run_id))?;
        let after = match r.after_offset.as_deref() {
            None | Some("") => 0,
            Some(s) => s.parse::<u64>().map_err(|_| {
                ConnectError::detailed("invalid_argument", format!("Invalid afterOffset: {s}"), E::Unspecified)
            })?,
        };
        Ok((run, Mode::Observe { after }))
    }

    fn download(&self, codec: Codec, body: &[u8], conn: &mut TcpStream) -> std::io::Result<bool> {
        use std::io::Write;
        let res = (|| {
            let r: proto::DownloadArtifactRequest =
                codec.decode(unenvelope(body)?, "sdk.v1.DownloadArtifactRequest")?;
            self.live_get(&r.agent_id)?;
            if r.path != ARTIFACT_PATH {
                return Err(ConnectError::new(
                    "not_found",
                    format!("Artifact not found: {}", r.path),
                ));
            }
            Ok(())
        })();
        if let Err(e) = res {
            runs::write_stream_error(conn, codec, Some(&e))?;
            return Ok(true);
        }
        let mut out = http::stream_head(codec.stream_content_type());
        for chunk in artifact_bytes().chunks(32 * 1024) {
            let p = codec.encode(&proto::DownloadArtifactChunk { data: chunk.to_vec() });
            let mut f = Vec::new();
            crate::connect::push_frame(&mut f, 0, &p);
            http::push_chunk(&mut out, &f);
        }
        http::push_chunk(&mut out, &crate::connect::end_frame(None));
        out.extend_from_slice(http::LAST_CHUNK);
        conn.write_all(&out)?;
        conn.flush()?;
        Ok(true)
    }
}

fn need_key(o: Option<proto::CursorRequestOptions>) -> Result<(), ConnectError> {
    if o.map(|o| o.api_key).unwrap_or_default().is_empty() {
        return Err(ConnectError::new(
            "unauthenticated",
            "API key is required for cloud catalog calls.",
        ));
    }
    Ok(())
}
