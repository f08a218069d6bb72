//! One error type for the whole library: a kind to branch on, plus everything the bridge said.
//!
//! Classification follows the brief: the `SdkErrorCode` first, the Connect code second, and only
//! where the real bridge is known to be inconsistent (`bridge-behavior.md` §3.4–3.5) the message
//! text, for the two documented cases ("not found" sent as `internal`, "already has active run"
//! sent as `internal`).

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use prost::Message as _;

use crate::proto;

/// What went wrong, coarsely: the thing a caller branches on.
///
/// The explicit discriminants are part of the C ABI (negated, they are the status codes) and are
/// never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorKind {
    /// A required argument was missing or malformed (NULL, bad UTF-8, bad JSON, unknown key…).
    InvalidArgument = 1,
    /// The bridge rejected our token, or the API key was missing or rejected.
    Auth = 2,
    /// The account may not do this (role, plan).
    PermissionDenied = 3,
    /// The agent, run or artifact does not exist (or is not visible from the given `cwd`).
    NotFound = 4,
    /// The agent already has an active run.
    Busy = 5,
    /// Rate or usage limit hit; see `retry_after` and `rate_limit`.
    RateLimited = 6,
    /// The bridge or its backend is unreachable or overloaded.
    Unavailable = 7,
    /// No bridge could be found, or it failed before its ready line.
    BridgeStartFailed = 8,
    /// The bridge process exited while we were using it.
    BridgeExited = 9,
    /// The connection to the bridge failed (reset, refused, I/O).
    Transport = 10,
    /// A deadline of the library's passed: the bridge did not answer within `requestTimeoutMs`
    /// (or a stream stayed silent for `streamIdleTimeoutMs`). Named `deadline` (C:
    /// `CURSOR_E_DEADLINE`), apart from a caller's own wait running out, which is not an error.
    Timeout = 11,
    /// The bridge sent something that breaks the protocol (bad frame, oversized frame, bad body).
    Protocol = 12,
    /// The operation was cancelled.
    Cancelled = 13,
    /// A bug or unexpected condition inside the library or the bridge.
    Internal = 14,
    /// The operation is not supported here (e.g. artifacts on local agents, idempotency keys).
    Unsupported = 15,
    /// The request was valid but the target is not in a state that allows it (e.g. archived).
    FailedPrecondition = 16,
    /// The caller used the API wrongly (a handle in the wrong state, a second completion,
    /// a client used after fork…).
    Usage = 17,
    /// A run ended with status `error` or `expired` where the call promised its result (the
    /// one-shot prompt); the message is the run's reason.
    RunFailed = 18,
    /// The agent is held by a run that no bridge of this client runs (made by another bridge
    /// process, or left `running` by one that died); see [`Error::run_id`].
    StaleRun = 19,
}

impl ErrorKind {
    /// A stable lower-case name, used in messages and the C API.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Auth => "auth",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Busy => "busy",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::BridgeStartFailed => "bridge_start_failed",
            ErrorKind::BridgeExited => "bridge_exited",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "deadline",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::FailedPrecondition => "failed_precondition",
            ErrorKind::Usage => "usage",
            ErrorKind::RunFailed => "run_failed",
            ErrorKind::StaleRun => "stale_run",
        }
    }

    /// Every kind, in discriminant order.
    /// cbindgen:ignore
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::InvalidArgument,
        ErrorKind::Auth,
        ErrorKind::PermissionDenied,
        ErrorKind::NotFound,
        ErrorKind::Busy,
        ErrorKind::RateLimited,
        ErrorKind::Unavailable,
        ErrorKind::BridgeStartFailed,
        ErrorKind::BridgeExited,
        ErrorKind::Transport,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
        ErrorKind::Cancelled,
        ErrorKind::Internal,
        ErrorKind::Unsupported,
        ErrorKind::FailedPrecondition,
        ErrorKind::Usage,
        ErrorKind::RunFailed,
        ErrorKind::StaleRun,
    ];
}

/// Rate-limit metadata, when the upstream reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    pub reset_epoch_seconds: Option<u64>,
}

/// The library's error: a kind plus every detail the bridge gave.
///
/// Kept small (the rarely present details are boxed) so `Result<T, Error>` stays cheap to
/// return, in this crate and in the callers' own functions.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Connect code as sent (`"not_found"`, `"internal"`…), when the error came from the bridge.
    pub connect_code: Option<String>,
    /// `SdkErrorCode` from the details (0 when absent); unknown values are kept as numbers.
    pub sdk_error_code: i32,
    pub message: String,
    /// HTTP status of the response that carried the error (200 for stream trailers).
    pub http_status: Option<u16>,
    /// Whether retrying the same call may succeed.
    pub retryable: bool,
    /// What else the bridge said, when it said more.
    pub details: Option<Box<ErrorDetails>>,
}

/// The optional parts of an error, from `SdkErrorDetails`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorDetails {
    /// Full request id from Cursor Cloud.
    pub request_id: Option<String>,
    pub retry_after: Option<Duration>,
    pub rate_limit: Option<RateLimit>,
    pub help_url: Option<String>,
    pub provider: Option<String>,
    /// The run the error is about (`StaleRun`).
    pub run_id: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let retryable = matches!(kind, ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::Unavailable);
        Error {
            kind,
            connect_code: None,
            sdk_error_code: 0,
            message: message.into(),
            http_status: None,
            retryable,
            details: None,
        }
    }

    /// Full request id from Cursor Cloud, when known.
    pub fn request_id(&self) -> Option<&str> {
        self.details.as_ref()?.request_id.as_deref()
    }

    /// How long to wait before retrying, when the bridge said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.details.as_ref()?.retry_after
    }

    pub fn rate_limit(&self) -> Option<RateLimit> {
        self.details.as_ref()?.rate_limit
    }

    pub fn help_url(&self) -> Option<&str> {
        self.details.as_ref()?.help_url.as_deref()
    }

    pub fn provider(&self) -> Option<&str> {
        self.details.as_ref()?.provider.as_deref()
    }

    /// The run the error is about, when it names one (`StaleRun`).
    pub fn run_id(&self) -> Option<&str> {
        self.details.as_ref()?.run_id.as_deref()
    }

    pub(crate) fn details_mut(&mut self) -> &mut ErrorDetails {
        self.details.get_or_insert_with(Default::default)
    }

    pub fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub fn protocol(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Protocol, message)
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, message)
    }

    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Usage, message)
    }

    /// The `SdkErrorCode` as the enum, if it is one we know.
    pub fn sdk_code(&self) -> Option<proto::SdkErrorCode> {
        proto::SdkErrorCode::try_from(self.sdk_error_code).ok()
    }

    /// Builds an error from a Connect error object (`{"code","message","details"}`), as found in
    /// a unary error body or a stream's end frame.
    pub fn from_connect_json(value: &serde_json::Value, http_status: Option<u16>) -> Error {
        let code = value
            .get("code")
            .and_then(|c| c.as_str())
            .unwrap_or("unknown")
            .to_string();
        let message = value.get("message").and_then(|m| m.as_str()).unwrap_or("").to_string();
        let details = value
            .get("details")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter(|d| d.get("type").and_then(|t| t.as_str()) == Some("sdk.v1.SdkErrorDetails"))
            .find_map(|d| d.get("value").and_then(|v| v.as_str()).and_then(decode_details));
        Error::from_parts(&code, message, details, http_status)
    }

    /// Builds an error from an HTTP response that is not a Connect error body (e.g. the bridge's
    /// empty-bodied 404/415/405), using the Connect HTTP→code mapping.
    pub fn from_http_status(status: u16, body: &[u8]) -> Error {
        let code = match status {
            400 => "invalid_argument",
            401 => "unauthenticated",
            403 => "permission_denied",
            404 => "unimplemented",
            408 => "deadline_exceeded",
            409 => "aborted",
            412 => "failed_precondition",
            413 => "resource_exhausted",
            415 => "internal",
            429 => "unavailable",
            431 => "resource_exhausted",
            502..=504 => "unavailable",
            _ => "unknown",
        };
        let snippet: String = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        let message = if snippet.trim().is_empty() {
            format!("bridge answered HTTP {status}")
        } else {
            format!("bridge answered HTTP {status}: {snippet}")
        };
        let mut e = Error::from_parts(code, message, None, Some(status));
        if status == 404 || status == 415 || status == 405 {
            // An empty 404/415/405 means the bridge does not know this RPC or encoding.
            e.kind = ErrorKind::Unsupported;
        }
        e
    }

    fn from_parts(
        code: &str,
        message: String,
        details: Option<proto::SdkErrorDetails>,
        http_status: Option<u16>,
    ) -> Error {
        let mut e = Error::new(ErrorKind::Internal, message);
        e.connect_code = Some(code.to_string());
        e.http_status = http_status;
        if let Some(d) = details {
            e.sdk_error_code = d.sdk_error_code;
            if e.message.is_empty() {
                e.message = d.message.clone();
            }
            let extra = ErrorDetails {
                request_id: d.request_id.filter(|s| !s.is_empty()),
                help_url: d.help_url.filter(|s| !s.is_empty()),
                provider: d.provider.filter(|s| !s.is_empty()),
                retry_after: d.retry_after.and_then(|ra| duration_from_proto(ra.seconds, ra.nanos)),
                rate_limit: d.rate_limit.map(|r| RateLimit {
                    limit: r.limit,
                    remaining: r.remaining,
                    reset_epoch_seconds: r.reset_epoch_seconds,
                }),
                run_id: None,
            };
            if extra != ErrorDetails::default() {
                e.details = Some(Box::new(extra));
            }
        }
        e.kind = classify(e.sdk_error_code, code, &e.message);
        e.retryable = e.retry_after().is_some()
            || matches!(
                e.kind,
                ErrorKind::RateLimited | ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Transport
            );
        e
    }
}

fn duration_from_proto(seconds: i64, nanos: i32) -> Option<Duration> {
    if seconds < 0 || nanos < 0 {
        return None;
    }
    Some(Duration::new(seconds as u64, nanos as u32))
}

/// Decodes the unpadded (or padded) base64 protobuf `SdkErrorDetails` of a Connect detail.
pub fn decode_details(b64: &str) -> Option<proto::SdkErrorDetails> {
    let trimmed = b64.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed))
        .ok()?;
    proto::SdkErrorDetails::decode(bytes.as_slice()).ok()
}

/// Chooses the kind: the SDK code wins, then the Connect code, then the two documented
/// inconsistencies of the real bridge, recognised by their text.
fn classify(sdk_code: i32, connect_code: &str, message: &str) -> ErrorKind {
    use proto::SdkErrorCode as C;
    if let Ok(code) = C::try_from(sdk_code) {
        let by_sdk = match code {
            C::Unspecified => None,
            C::Unauthorized | C::ApiKeyNotFound => Some(ErrorKind::Auth),
            C::PlanRequired | C::RoleForbidden => Some(ErrorKind::PermissionDenied),
            C::FeatureUnavailable => Some(ErrorKind::Unsupported),
            C::AgentNotFound | C::RunNotFound => Some(ErrorKind::NotFound),
            C::ValidationError | C::InvalidModel | C::InvalidBranchName | C::RepositoryRequired => {
                Some(ErrorKind::InvalidArgument)
            }
            C::RepositoryAccess | C::PrResolutionFailed => Some(ErrorKind::PermissionDenied),
            C::UsageLimitExceeded | C::RateLimitExceeded => Some(ErrorKind::RateLimited),
            C::AgentBusy => Some(ErrorKind::Busy),
            C::AgentArchived | C::RunNotCancellable => Some(ErrorKind::FailedPrecondition),
            C::UpstreamError => Some(ErrorKind::Unavailable),
            C::InternalError => Some(ErrorKind::Internal),
            C::ClientCancelled => Some(ErrorKind::Cancelled),
        };
        if let Some(kind) = by_sdk {
            return kind;
        }
    }
    let lower = message.to_ascii_lowercase();
    // bridge-behavior.md §0: an unreachable Cursor backend is `internal` "Network request failed".
    if lower == "network request failed" {
        return ErrorKind::Unavailable;
    }
    // bridge-behavior.md §3.4: "Agent … already has active run" arrives as `internal`.
    if lower.contains("already has active run") {
        return ErrorKind::Busy;
    }
    // §3.4: "Cannot delete agent …: active run … is not terminal" and "…archived agent…" are
    // `internal` too, but are refusals of the agent's state.
    if lower.contains("is not terminal") || lower.contains("on archived agent") {
        return ErrorKind::FailedPrecondition;
    }
    match connect_code {
        "unauthenticated" => ErrorKind::Auth,
        "permission_denied" => ErrorKind::PermissionDenied,
        "not_found" => ErrorKind::NotFound,
        "invalid_argument" | "out_of_range" => {
            // §3.5: an unknown run is `invalid_argument` "Run … not found" from GetRun/CancelRun/ObserveRun.
            if is_not_found_text(&lower) {
                ErrorKind::NotFound
            } else {
                ErrorKind::InvalidArgument
            }
        }
        "resource_exhausted" => ErrorKind::RateLimited,
        "unavailable" => ErrorKind::Unavailable,
        "deadline_exceeded" => ErrorKind::Timeout,
        "canceled" | "cancelled" => ErrorKind::Cancelled,
        "unimplemented" => ErrorKind::Unsupported,
        "failed_precondition" | "aborted" | "already_exists" => ErrorKind::FailedPrecondition,
        _ => {
            // §3.4/3.5: Archive/Unarchive/Delete of an unknown agent is `internal` "Agent … not found".
            if is_not_found_text(&lower) {
                ErrorKind::NotFound
            } else {
                ErrorKind::Internal
            }
        }
    }
}

fn is_not_found_text(lower: &str) -> bool {
    (lower.starts_with("agent ")
        || lower.starts_with("run ")
        || lower.starts_with("unknown agent")
        || lower.starts_with("unknown run"))
        && (lower.ends_with(" not found") || lower.starts_with("unknown "))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)?;
        if let Some(id) = self.request_id() {
            write!(f, " (request id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn details_b64(d: &proto::SdkErrorDetails) -> String {
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(d.encode_to_vec())
    }

    #[test]
    fn real_bridge_run_not_found_value_decodes() {
        // Captured from the real bridge (bridge-behavior.md §2): ObserveRun on "run-nope".
        let d = decode_details("GhZSdW4gcnVuLW5vcGUgbm90IGZvdW5k").expect("decodes");
        assert_eq!(d.message, "Run run-nope not found");
        assert_eq!(d.sdk_error_code, 0);
        let e = Error::from_connect_json(
            &json!({"code":"invalid_argument","message":"Run run-nope not found",
                     "details":[{"type":"sdk.v1.SdkErrorDetails","debug":{},"value":"GhZSdW4gcnVuLW5vcGUgbm90IGZvdW5k"}]}),
            Some(200),
        );
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert_eq!(e.connect_code.as_deref(), Some("invalid_argument"));
    }

    #[test]
    fn full_details_survive() {
        let d = proto::SdkErrorDetails {
            request_id: Some("req-0123456789abcdef-full".into()),
            sdk_error_code: proto::SdkErrorCode::RateLimitExceeded as i32,
            message: "slow down".into(),
            help_url: Some("https://cursor.com/help".into()),
            provider: Some("anthropic".into()),
            retry_after: Some(pbjson_types::Duration {
                seconds: 7,
                nanos: 500_000_000,
            }),
            rate_limit: Some(proto::RateLimitInfo {
                limit: Some(100),
                remaining: Some(0),
                reset_epoch_seconds: Some(1_800_000_000),
            }),
        };
        let e = Error::from_connect_json(
            &json!({"code":"resource_exhausted","message":"","details":[{"type":"sdk.v1.SdkErrorDetails","value":details_b64(&d)}]}),
            Some(429),
        );
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert_eq!(e.message, "slow down");
        assert_eq!(e.request_id(), Some("req-0123456789abcdef-full"));
        assert_eq!(e.retry_after(), Some(Duration::from_millis(7500)));
        assert_eq!(
            e.rate_limit(),
            Some(RateLimit {
                limit: Some(100),
                remaining: Some(0),
                reset_epoch_seconds: Some(1_800_000_000)
            })
        );
        assert_eq!(e.help_url(), Some("https://cursor.com/help"));
        assert_eq!(e.provider(), Some("anthropic"));
        assert!(e.retryable);
        assert_eq!(e.http_status, Some(429));
    }

    #[test]
    fn unknown_sdk_code_is_kept_as_number() {
        let d = proto::SdkErrorDetails {
            sdk_error_code: 999,
            message: "new".into(),
            ..Default::default()
        };
        let e = Error::from_connect_json(
            &json!({"code":"not_found","message":"x","details":[{"type":"sdk.v1.SdkErrorDetails","value":details_b64(&d)}]}),
            Some(404),
        );
        assert_eq!(e.sdk_error_code, 999);
        assert_eq!(e.sdk_code(), None);
        assert_eq!(e.kind, ErrorKind::NotFound);
    }

    #[test]
    fn bridge_inconsistencies_map_to_the_right_kind() {
        let cases = [
            (
                json!({"code":"internal","message":"Agent agent-00000000 not found"}),
                ErrorKind::NotFound,
            ),
            (
                json!({"code":"internal","message":"Agent agent-1 already has active run"}),
                ErrorKind::Busy,
            ),
            (
                json!({"code":"not_found","message":"Unknown agent: agent-1"}),
                ErrorKind::NotFound,
            ),
            (
                json!({"code":"not_found","message":"Unknown run: run-1"}),
                ErrorKind::NotFound,
            ),
            (
                json!({"code":"invalid_argument","message":"Run run-1 not found"}),
                ErrorKind::NotFound,
            ),
            (
                json!({"code":"invalid_argument","message":"Cloud getRun requests require agentId"}),
                ErrorKind::InvalidArgument,
            ),
            (
                json!({"code":"internal","message":"Network request failed"}),
                ErrorKind::Unavailable,
            ),
            (
                json!({"code":"unauthenticated","message":"Unauthorized"}),
                ErrorKind::Auth,
            ),
            (
                json!({"code":"unimplemented","message":"Idempotency-Key is only supported for cloud CreateAgent in v1"}),
                ErrorKind::Unsupported,
            ),
            (
                json!({"code":"internal","message":"Cannot create follow-up run on archived agent a. Unarchive it first."}),
                ErrorKind::FailedPrecondition,
            ),
            (
                json!({"code":"internal","message":"Cannot delete agent a: active run r is not terminal. Call run.cancel() first."}),
                ErrorKind::FailedPrecondition,
            ),
        ];
        for (body, kind) in cases {
            assert_eq!(Error::from_connect_json(&body, Some(500)).kind, kind, "{body}");
        }
    }

    #[test]
    fn sdk_code_beats_connect_code() {
        let d = proto::SdkErrorDetails {
            sdk_error_code: proto::SdkErrorCode::AgentBusy as i32,
            ..Default::default()
        };
        let e = Error::from_connect_json(
            &json!({"code":"internal","message":"busy","details":[{"type":"sdk.v1.SdkErrorDetails","value":details_b64(&d)}]}),
            Some(500),
        );
        assert_eq!(e.kind, ErrorKind::Busy);
    }

    #[test]
    fn malformed_details_are_ignored_not_fatal() {
        for value in [json!("!!!not base64"), json!(42), json!("AAAA"), json!(null)] {
            let e = Error::from_connect_json(
                &json!({"code":"not_found","message":"m","details":[{"type":"sdk.v1.SdkErrorDetails","value":value}]}),
                Some(404),
            );
            assert_eq!(e.kind, ErrorKind::NotFound);
            assert_eq!(e.message, "m");
        }
        let e = Error::from_connect_json(&json!("not an object"), None);
        assert_eq!(e.kind, ErrorKind::Internal);
    }

    #[test]
    fn empty_http_errors_map_by_status() {
        assert_eq!(Error::from_http_status(404, b"").kind, ErrorKind::Unsupported);
        assert_eq!(Error::from_http_status(415, b"").kind, ErrorKind::Unsupported);
        assert_eq!(Error::from_http_status(401, b"").kind, ErrorKind::Auth);
        assert_eq!(Error::from_http_status(503, b"").kind, ErrorKind::Unavailable);
        assert!(Error::from_http_status(502, b"bad gateway")
            .message
            .contains("bad gateway"));
    }
}
