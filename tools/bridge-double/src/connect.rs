//! Connect protocol pieces: codecs, errors (with `SdkErrorDetails`), stream frames.

use crate::proto;
use prost::Message;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Codec {
    Proto,
    Json,
}

impl Codec {
    pub fn unary_content_type(self) -> &'static str {
        match self {
            Codec::Proto => "application/proto",
            Codec::Json => "application/json",
        }
    }
    pub fn stream_content_type(self) -> &'static str {
        match self {
            Codec::Proto => "application/connect+proto",
            Codec::Json => "application/connect+json",
        }
    }

    /// Codec from a content type; `streaming` selects the `connect+` family.
    pub fn from_content_type(ct: Option<&str>, streaming: bool) -> Option<Codec> {
        let base = ct?.split(';').next()?.trim().to_ascii_lowercase();
        match (streaming, base.as_str()) {
            (false, "application/proto") => Some(Codec::Proto),
            (false, "application/json") => Some(Codec::Json),
            (true, "application/connect+proto") => Some(Codec::Proto),
            (true, "application/connect+json") => Some(Codec::Json),
            _ => None,
        }
    }

    pub fn decode<T: Message + Default + DeserializeOwned>(
        self,
        body: &[u8],
        type_name: &str,
    ) -> Result<T, ConnectError> {
        match self {
            Codec::Proto => T::decode(body).map_err(|e| ConnectError::new("internal", format!("parse binary: {e}"))),
            Codec::Json => serde_json::from_slice::<T>(body).map_err(|e| {
                let msg = if body.iter().all(|b| b.is_ascii_whitespace()) {
                    format!("cannot decode {type_name} from JSON: Unexpected end of JSON input")
                } else {
                    format!("cannot decode {type_name} from JSON: {e}")
                };
                ConnectError::new("invalid_argument", msg)
            }),
        }
    }

    pub fn encode<T: Message + Serialize>(self, msg: &T) -> Vec<u8> {
        match self {
            Codec::Proto => msg.encode_to_vec(),
            Codec::Json => serde_json::to_vec(msg).expect("serialize message"),
        }
    }
}

/// A Connect error as the bridge sends it.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub code: &'static str,
    pub message: String,
    pub details: Option<Box<proto::SdkErrorDetails>>,
}

impl ConnectError {
    /// An error without details (the bridge's bare errors: "Unknown agent", auth, ...).
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        ConnectError {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// An error with `SdkErrorDetails{message, sdk_error_code}`.
    pub fn detailed(code: &'static str, message: impl Into<String>, sdk_code: proto::SdkErrorCode) -> Self {
        let message = message.into();
        let details = proto::SdkErrorDetails {
            message: message.clone(),
            sdk_error_code: sdk_code as i32,
            ..Default::default()
        };
        ConnectError {
            code,
            message,
            details: Some(Box::new(details)),
        }
    }

    pub fn http_status(&self) -> u16 {
        match self.code {
            "canceled" => 499,
            "unknown" | "internal" | "data_loss" => 500,
            "invalid_argument" | "failed_precondition" | "out_of_range" => 400,
            "deadline_exceeded" => 504,
            "not_found" => 404,
            "already_exists" | "aborted" => 409,
            "permission_denied" => 403,
            "resource_exhausted" => 429,
            "unimplemented" => 501,
            "unavailable" => 503,
            "unauthenticated" => 401,
            _ => 500,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.details {
            v["details"] = json!([{
                "type": "sdk.v1.SdkErrorDetails",
                "value": crate::util::b64_unpadded(&d.encode_to_vec()),
                "debug": serde_json::to_value(d).unwrap_or(Value::Null),
            }]);
        }
        v
    }
}

pub const FLAG_END: u8 = 0x02;

/// Appends one enveloped frame (flag + 4-byte BE length + payload).
pub fn push_frame(out: &mut Vec<u8>, flag: u8, payload: &[u8]) {
    out.push(flag);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
}

pub fn end_frame(err: Option<&ConnectError>) -> Vec<u8> {
    let payload = match err {
        None => b"{}".to_vec(),
        Some(e) => serde_json::to_vec(&json!({"error": e.to_json()})).expect("json"),
    };
    let mut out = Vec::with_capacity(payload.len() + 5);
    push_frame(&mut out, FLAG_END, &payload);
    out
}

/// Splits a streaming request body into its single message frame.
pub fn unenvelope(body: &[u8]) -> Result<&[u8], ConnectError> {
    if body.len() < 5 {
        return Err(ConnectError::new(
            "invalid_argument",
            "protocol error: promised 5 bytes in enveloped message, got less",
        ));
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    if body.len() < 5 + len {
        return Err(ConnectError::new(
            "invalid_argument",
            format!(
                "protocol error: promised {len} bytes in enveloped message, got {} bytes",
                body.len() - 5
            ),
        ));
    }
    Ok(&body[5..5 + len])
}
