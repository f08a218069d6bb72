//! An agent handle: its id plus the `cwd` and API key it was made with, which every management
//! call passes along (the bridge scopes store reads by `cwd`).

use std::io::Read;

use parking_lot::Mutex;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::link::AGENTS;
use crate::proto;
use crate::run::{Run, RunCtx};
use crate::transport::{FrameStream, Idempotency};

/// A local or cloud agent known to the bridge.
pub struct Agent {
    client: Client,
    id: String,
    cwd: Option<String>,
    api_key: String,
    model: Mutex<Option<proto::ModelSelection>>,
    reclaim_stale_runs: std::sync::atomic::AtomicBool,
}

impl Agent {
    pub(crate) fn new(
        client: Client,
        id: String,
        cwd: Option<String>,
        api_key: String,
        model: Option<proto::ModelSelection>,
    ) -> Agent {
        Agent {
            client,
            id,
            cwd,
            api_key,
            model: Mutex::new(model),
            reclaim_stale_runs: Default::default(),
        }
    }

    /// Makes every send of this agent take it over from a stale run (see [`Agent::send_full`]).
    pub fn set_reclaim_stale_runs(&self, on: bool) {
        self.reclaim_stale_runs.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client this agent belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The agent's working directory, for local agents.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// The model the next run uses (a send-time override persists, as upstream).
    pub fn model(&self) -> Option<proto::ModelSelection> {
        self.model.lock().clone()
    }

    pub(crate) fn set_model(&self, model: proto::ModelSelection) {
        *self.model.lock() = Some(model);
    }

    pub(crate) fn key(&self) -> String {
        self.client.key(&self.api_key)
    }

    fn op_opts(&self) -> proto::AgentOperationOptions {
        proto::AgentOperationOptions {
            cwd: self.cwd.clone().unwrap_or_default(),
            api_key: self.api_key.clone(),
        }
    }

    /// Sends a message and returns the live run once its stream is open (send-time errors,
    /// such as an unknown or busy agent, are returned here). A model in `opts` persists for
    /// later sends, as upstream.
    pub fn send(&self, message: proto::UserMessage, opts: proto::SendOptions) -> Result<Run> {
        self.send_with_key(message, opts, None)
    }

    /// Sends plain text with default options.
    pub fn send_text(&self, text: &str) -> Result<Run> {
        self.send(proto::UserMessage::text(text), proto::SendOptions::default())
    }

    /// `send` with an idempotency key (cloud agents; the bridge rejects it for local ones).
    pub fn send_with_key(
        &self,
        message: proto::UserMessage,
        opts: proto::SendOptions,
        idempotency_key: Option<String>,
    ) -> Result<Run> {
        self.send_full(message, opts, idempotency_key, false)
    }

    /// `send` with every request-level choice. The bridge refuses a send while the agent has an
    /// active run; when that run is one this client does not stream (made by another bridge
    /// process, e.g. the `queued` run of every create, or left `running` by a bridge that died),
    /// the refusal is `StaleRun`, naming the run. With `reclaim_stale_runs` (or
    /// [`Agent::set_reclaim_stale_runs`]) such a run is cancelled by id and the send made again.
    pub fn send_full(
        &self,
        message: proto::UserMessage,
        opts: proto::SendOptions,
        idempotency_key: Option<String>,
        reclaim_stale_runs: bool,
    ) -> Result<Run> {
        let model = opts.model.clone();
        let req = proto::SendRequest {
            agent_id: self.id.clone(),
            message: Some(message),
            options: Some(opts),
            idempotency_key,
        };
        let reclaim = reclaim_stale_runs || self.reclaim_stale_runs.load(std::sync::atomic::Ordering::Relaxed);
        let run = match Run::start_send(self.run_ctx()?, &req) {
            // Before cursor-sdk 1.0.27 the bridge refuses a busy agent with a bare "internal
            // error": told apart the same way as a busy one.
            Err(e) if e.kind == ErrorKind::Busy || crate::client::is_bare_internal(&e) => {
                if self.client.link().streams_agent(&self.id) {
                    if e.kind == ErrorKind::Busy {
                        return Err(e);
                    }
                    let mut busy = Error::new(
                        ErrorKind::Busy,
                        format!(
                            "agent {} already has an active run (the bridge said only \"internal error\")",
                            self.id
                        ),
                    );
                    busy.connect_code = e.connect_code;
                    busy.http_status = e.http_status;
                    return Err(busy);
                }
                let cwd = self.client.cwd_or_workspace(self.cwd.as_deref().unwrap_or(""));
                match self.client.stale_run(&self.id, &cwd) {
                    Ok(Some(run_id)) if reclaim => {
                        crate::log::emit(
                            crate::log::Level::Info,
                            &format!("agent {}: cancelling stale run {run_id} to send", self.id),
                        );
                        self.client.cancel_run(&self.id, &run_id, Some(&cwd))?;
                        Run::start_send(self.run_ctx()?, &req)?
                    }
                    Ok(Some(run_id)) => return Err(stale_run_error(&self.id, &run_id, &e)),
                    _ => return Err(e),
                }
            }
            other => other?,
        };
        if let Some(m) = model.filter(|m| !m.id.is_empty()) {
            self.set_model(m);
        }
        Ok(run)
    }

    /// Opens the durable event stream of one of this agent's runs, after `after_offset`.
    pub fn observe(&self, run_id: &str, after_offset: Option<&str>) -> Result<Run> {
        Run::open_observe(self.run_ctx()?, run_id, after_offset)
    }

    /// Where this agent's runs live: the current bridge (started if needed).
    fn run_ctx(&self) -> Result<RunCtx> {
        Ok(RunCtx {
            link: self.client.link().clone(),
            conn: self.client.connection()?,
            _keep: self.client.keep_alive(),
            agent_id: self.id.clone(),
            cwd: self.cwd.clone().unwrap_or_default(),
        })
    }

    /// Fresh metadata from the store.
    pub fn info(&self) -> Result<proto::SdkAgentInfo> {
        self.client.get_agent(&self.id, self.op_opts())
    }

    pub fn archive(&self) -> Result<()> {
        self.client.archive_agent(&self.id, self.op_opts())
    }

    pub fn unarchive(&self) -> Result<()> {
        self.client.unarchive_agent(&self.id, self.op_opts())
    }

    /// Deletes the agent and its durable data (fails while a run is active).
    pub fn delete(&self) -> Result<()> {
        self.client.delete_agent(&self.id, self.op_opts())
    }

    /// Releases the bridge's in-memory agent (durable state stays; `resume` brings it back).
    /// Its own tools (from `create_agent_with_tools`) are unregistered.
    pub fn close(&self) -> Result<()> {
        self.client.forget_agent_tools(&self.id);
        let req = proto::CloseAgentRequest {
            agent_id: self.id.clone(),
        };
        self.client
            .unary::<_, proto::CloseAgentResponse>(AGENTS, "CloseAgent", &req, Idempotency::NotIdempotent)
            .map(drop)
    }

    /// Reloads the agent's durable state from its store.
    pub fn reload(&self) -> Result<()> {
        let req = proto::ReloadAgentRequest {
            agent_id: self.id.clone(),
        };
        self.client
            .unary::<_, proto::ReloadAgentResponse>(AGENTS, "ReloadAgent", &req, Idempotency::Idempotent)
            .map(drop)
    }

    /// Messages recorded for the agent.
    pub fn messages(&self, mut opts: proto::GetAgentMessagesOptions) -> Result<Vec<proto::AgentMessage>> {
        if opts.cwd.is_empty() {
            opts.cwd = self.client.cwd_or_workspace(self.cwd.as_deref().unwrap_or(""));
        }
        if opts.api_key.is_empty() {
            opts.api_key = self.key();
        }
        let req = proto::ListAgentMessagesRequest {
            agent_id: self.id.clone(),
            options: Some(opts),
        };
        let r: proto::ListAgentMessagesResponse =
            self.client
                .unary(AGENTS, "ListAgentMessages", &req, Idempotency::Idempotent)?;
        if r.messages.is_empty() {
            // The bridge answers an unknown agent with an empty list: tell the two apart.
            self.info()?;
        }
        Ok(r.messages)
    }

    /// Artifacts the agent produced (cloud agents).
    pub fn artifacts(&self) -> Result<Vec<proto::SdkArtifact>> {
        let req = proto::ListArtifactsRequest {
            agent_id: self.id.clone(),
        };
        let r: proto::ListArtifactsResponse =
            self.client
                .unary(AGENTS, "ListArtifacts", &req, Idempotency::Idempotent)?;
        Ok(r.artifacts)
    }

    /// Streams an artifact's bytes; read it like a file.
    pub fn download_artifact(&self, path: &str) -> Result<ArtifactReader> {
        let req = proto::DownloadArtifactRequest {
            agent_id: self.id.clone(),
            path: path.to_string(),
        };
        let mut stream = self.client.stream(AGENTS, "DownloadArtifact", &req)?;
        // Surface errors (unknown agent, local agent) now rather than on first read.
        let first = next_chunk(&mut stream)?;
        Ok(ArtifactReader {
            stream: Some(stream),
            chunk: first.unwrap_or_default(),
            pos: 0,
        })
    }

    /// Token usage and cost (cloud agents; local agents fail).
    pub fn usage(&self, run_id: Option<&str>) -> Result<proto::AgentUsage> {
        let req = proto::GetUsageRequest {
            agent_id: self.id.clone(),
            run_id: run_id.map(str::to_string),
        };
        let r: proto::GetUsageResponse = self.client.unary(AGENTS, "GetUsage", &req, Idempotency::Idempotent)?;
        Ok(r.usage.unwrap_or_default())
    }

    /// Runs of this agent (see [`Client::list_runs`] for the live-run caveat).
    pub fn runs(&self, mut opts: proto::ListRunsOptions) -> Result<crate::client::Page<proto::RunSnapshot>> {
        if opts.cwd.is_empty() {
            opts.cwd = self.cwd.clone().unwrap_or_default();
        }
        if opts.api_key.is_empty() {
            opts.api_key = self.api_key.clone();
        }
        self.client.list_runs(&self.id, opts)
    }
}

fn stale_run_error(agent_id: &str, run_id: &str, refusal: &Error) -> Error {
    let mut e = Error::new(
        ErrorKind::StaleRun,
        format!(
            "agent {agent_id} is held by run {run_id}, which no bridge of this client is running (another \
             bridge process made it, or its bridge died); cancel it by id (cursor_client_cancel_run / \
             Client::cancel_run) or send with \"reclaimStaleRuns\": true to take the agent over"
        ),
    );
    e.connect_code = refusal.connect_code.clone();
    e.http_status = refusal.http_status;
    e.details_mut().run_id = Some(run_id.to_string());
    e
}

fn next_chunk(stream: &mut FrameStream) -> Result<Option<Vec<u8>>> {
    Ok(stream.next_message::<proto::DownloadArtifactChunk>()?.map(|c| c.data))
}

/// Reads a downloaded artifact chunk by chunk, without holding it all in memory.
pub struct ArtifactReader {
    stream: Option<FrameStream>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for ArtifactReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.chunk.len() {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(0);
            };
            match next_chunk(stream) {
                Ok(Some(c)) => {
                    self.chunk = c;
                    self.pos = 0;
                }
                Ok(None) => {
                    self.stream = None;
                    return Ok(0);
                }
                Err(e) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl ArtifactReader {
    /// Reads everything that is left.
    pub fn read_all(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_to_end(&mut out)
            .map_err(|e| match e.into_inner().map(|i| i.downcast::<Error>()) {
                Some(Ok(err)) => *err,
                Some(Err(other)) => Error::internal(other.to_string()),
                None => Error::internal("artifact read failed"),
            })?;
        Ok(out)
    }
}
