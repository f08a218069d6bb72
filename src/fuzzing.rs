//! Entry points for the fuzz targets in `fuzz/`: private parsers, reached only from there.
//! Not part of the API; nothing else uses this module.
#![doc(hidden)]

use serde_json::Value;

use crate::proto::{self, run_stream_message::Envelope};
use crate::struct_json;
use prost::bytes::Bytes;

/// One `sdk_message` frame as the stream reader hands it to a consumer.
#[derive(Debug, PartialEq)]
pub struct SdkFrame {
    pub r#type: String,
    pub payload: Value,
    pub offset: Option<String>,
    /// The assistant text `Event::text` gives (`None` for other types, or an empty text).
    pub text: Option<String>,
}

/// The reader's fast path: `scan`, then the event the consumer makes of it (type, offset and
/// text off the wire bytes, the payload decoded from them). `None`: not an `sdk_message` frame
/// the fast path takes (the generated decoder does); `Some(Err)`: refused.
pub fn sdk_frame_fast(frame: &[u8]) -> Option<Result<SdkFrame, &'static str>> {
    let mut seen = struct_json::Seen::default();
    let scanned = struct_json::scan(frame, &mut seen);
    // The same frame again, its lead now seen: the same result.
    assert_eq!(struct_json::scan(frame, &mut seen), scanned, "once seen");
    let scan = match scanned? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let event = crate::run::Event::from_scan(Bytes::copy_from_slice(frame), &scan);
    Some(Ok(SdkFrame {
        r#type: event.r#type().to_string(),
        offset: event.offset().map(str::to_string),
        text: event.text().map(str::to_string),
        payload: event.into_payload(),
    }))
}

/// The generated decoder and `struct_to_json`, the path the fast one must equal. `Ok(None)`: a
/// valid frame that is not an `sdk_message`.
pub fn sdk_frame_generated(frame: &[u8]) -> Result<Option<SdkFrame>, prost::DecodeError> {
    let msg = <proto::RunStreamMessage as prost::Message>::decode(frame)?;
    let Some(Envelope::SdkMessage(m)) = msg.envelope else {
        return Ok(None);
    };
    let payload = m.message.map(crate::run::struct_to_json).unwrap_or(Value::Null);
    // `Event::text` on a decoded payload: the JSON path.
    let event = crate::run::Event::new(crate::run::EventKind::Message, m.r#type, payload, msg.offset);
    let text = event.text().map(str::to_string);
    Ok(Some(SdkFrame {
        r#type: event.r#type().to_string(),
        offset: event.offset().map(str::to_string),
        text,
        payload: event.into_payload(),
    }))
}
