//! Connect error bodies and their details: `Error::from_connect_json` (unary error bodies and
//! stream end frames), `error::decode_details` (base64 `SdkErrorDetails`) and
//! `Error::from_http_status` (bodies that are not Connect errors). Input: `[status: 2 bytes
//! big-endian][body…]`; the body goes to all three.
#![no_main]

use base64::Engine as _;
use cursor_sdk::error::decode_details;
use cursor_sdk::{Error, ErrorKind};
use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use serde_json::Value;

/// What holds for every error, whatever built it.
fn sane(e: &Error) {
    let retryable = e.retry_after().is_some()
        || matches!(
            e.kind,
            ErrorKind::RateLimited | ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Transport
        );
    assert_eq!(e.retryable, retryable, "{e:?}");
    let shown = e.to_string();
    assert!(shown.starts_with(e.kind.name()), "{shown}");
}

fn connect_json(v: &Value, status: Option<u16>) {
    let e = Error::from_connect_json(v, status);
    sane(&e);
    assert_eq!(e.http_status, status);
    let code = v.get("code").and_then(Value::as_str).unwrap_or("unknown");
    assert_eq!(e.connect_code.as_deref(), Some(code));
    match v.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => assert_eq!(e.message, m),
        _ => {}
    }
    // The first detail of our type that decodes is the one used.
    let detail = v
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|d| d.get("type").and_then(Value::as_str) == Some("sdk.v1.SdkErrorDetails"))
        .find_map(|d| d.get("value").and_then(Value::as_str).and_then(decode_details));
    assert_eq!(e.sdk_error_code, detail.map_or(0, |d| d.sdk_error_code), "{e:?}");
}

fn details(text: &str) {
    let Some(d) = decode_details(text) else { return };
    // Whatever decoded must decode again, the same, from any of the encodings a bridge may use.
    let bytes = d.encode_to_vec();
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        assert_eq!(decode_details(&engine.encode(&bytes)).as_ref(), Some(&d));
    }
}

fn http_status(status: u16, body: &[u8]) {
    let e = Error::from_http_status(status, body);
    sane(&e);
    assert_eq!(e.http_status, Some(status));
    assert!(
        e.message.starts_with(&format!("bridge answered HTTP {status}")),
        "{}",
        e.message
    );
    // At most 200 body bytes are quoted (each may become a 3-byte replacement character).
    assert!(e.message.len() <= 40 + 3 * 200, "{} bytes", e.message.len());
    if matches!(status, 404 | 405 | 415) {
        assert_eq!(e.kind, ErrorKind::Unsupported);
    }
}

fuzz_target!(|input: &[u8]| {
    let [s1, s2, body @ ..] = input else { return };
    let status = u16::from_be_bytes([*s1, *s2]);
    http_status(status, body);
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        connect_json(&v, Some(status));
        // A stream's end frame: `{"error": {...}}` with the 200 of the stream.
        if let Some(err) = v.get("error") {
            connect_json(err, Some(200));
        }
        connect_json(&v, None);
    }
    if let Ok(text) = std::str::from_utf8(body) {
        details(text);
    }
});
