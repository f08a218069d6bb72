//! Sends that timed out. A `Send` whose answer did not come within the request timeout has
//! failed for the caller, but the bridge may only be stalled: when it wakes up it reads the
//! request and starts the run. Nobody would read that run, and the agent would stay busy until it
//! ended. So the request's connection is kept on a short-lived library thread that waits (at most
//! [`WATCH_LIMIT`], and never past the client's shutdown) for the bridge to name the run, then
//! cancels it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;

use crate::link::{CallOpts, Connection, Link, AGENTS};
use crate::proto::{self, run_stream_message::Envelope};
use crate::transport::{AbortSlot, FrameStream, Idempotency, PendingStream};

/// How long a timed-out send is watched for a run to cancel.
pub(crate) const WATCH_LIMIT: Duration = Duration::from_secs(600);

/// What is left of a send that timed out.
pub(crate) enum Unanswered {
    /// The request went out; the response head never came.
    Head(Box<PendingStream>),
    /// The head came, the first frame did not.
    Stream(Box<FrameStream>),
}

/// Watches `what` on a library thread and cancels the run it turns out to have started.
pub(crate) fn watch(link: &Arc<Link>, conn: &Arc<Connection>, agent_id: &str, what: Unanswered) {
    let (link, conn, agent_id) = (link.clone(), conn.clone(), agent_id.to_string());
    let slot = link.watch_slot(&agent_id);
    let spawned = std::thread::Builder::new().name("cursor-send-watch".into()).spawn({
        let (link, slot) = (link.clone(), slot.clone());
        move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Some(run_id) = run_of(what, &slot, Instant::now() + WATCH_LIMIT) {
                    cancel(&link, &conn, &agent_id, &run_id, &slot);
                }
            }));
            link.unwatch(&slot);
        }
    });
    if spawned.is_err() {
        link.unwatch(&slot);
    }
}

/// The id of the run the send started, once the bridge names it (None: it never did, or it
/// refused the send).
fn run_of(what: Unanswered, slot: &AbortSlot, deadline: Instant) -> Option<String> {
    let mut stream = match what {
        Unanswered::Head(pending) => {
            slot.set(pending.abort_handle().ok()?);
            pending.wait(deadline).ok()?
        }
        Unanswered::Stream(stream) => *stream,
    };
    slot.set(stream.abort_handle());
    stream.set_limits(Some(deadline), None);
    loop {
        let batch = stream.next_batch().ok()?;
        if let Some(id) = batch.frames.iter().find_map(|r| run_id_in(&batch.data[r.clone()])) {
            return Some(id);
        }
        if batch.end {
            return None;
        }
    }
}

fn run_id_in(frame: &[u8]) -> Option<String> {
    let id = match proto::RunStreamMessage::decode(frame).ok()?.envelope? {
        Envelope::SdkMessage(m) => match m.message?.fields.get("run_id")?.kind.as_ref()? {
            pbjson_types::value::Kind::StringValue(s) => s.clone(),
            _ => return None,
        },
        Envelope::Result(r) => r.run_id,
        Envelope::Done(d) => d.run_id,
        _ => return None,
    };
    Some(id).filter(|id| !id.is_empty())
}

fn cancel(link: &Link, conn: &Arc<Connection>, agent_id: &str, run_id: &str, slot: &AbortSlot) {
    let req = proto::CancelRunRequest {
        run_id: run_id.to_string(),
        agent_id: Some(agent_id.to_string()),
    };
    let opts = CallOpts {
        deadline: None,
        abort: Some(slot),
    };
    let outcome =
        link.unary::<_, proto::CancelRunResponse>(conn, AGENTS, "CancelRun", &req, Idempotency::Idempotent, opts);
    let line = match outcome {
        Ok(_) => format!("a send that timed out started run {run_id} later; cancelled it"),
        Err(e) => format!("a send that timed out started run {run_id} later; cancelling it failed: {e}"),
    };
    crate::log::emit(crate::log::Level::Info, &line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_is_found_in_each_kind_of_first_frame() {
        let status = proto::RunStreamMessage {
            envelope: Some(Envelope::SdkMessage(proto::SdkMessage {
                r#type: "status".into(),
                message: Some(serde_json::from_value(serde_json::json!({"run_id": "run-1"})).unwrap()),
            })),
            offset: None,
        };
        assert_eq!(run_id_in(&status.encode_to_vec()).as_deref(), Some("run-1"));
        let done = proto::RunStreamMessage {
            envelope: Some(Envelope::Done(proto::RunStreamDone {
                run_id: "run-2".into(),
                ..Default::default()
            })),
            offset: None,
        };
        assert_eq!(run_id_in(&done.encode_to_vec()).as_deref(), Some("run-2"));
        assert_eq!(run_id_in(&proto::RunStreamMessage::default().encode_to_vec()), None);
        assert_eq!(run_id_in(b"\xff\xff"), None);
    }
}
