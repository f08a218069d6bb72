//! Entry points for the fuzz targets in `fuzz/`: private parsers, reached only from there.
//! Not part of the API; nothing else uses this module.
#![doc(hidden)]

use serde_json::Value;

use crate::proto::{self, run_stream_message::Envelope};
use crate::struct_json::{self, TextAt};

/// One `sdk_message` frame as the stream reader hands it to a consumer.
#[derive(Debug, PartialEq)]
pub struct SdkFrame {
    pub r#type: String,
    pub payload: Value,
    pub offset: Option<String>,
    /// The assistant text `Event::text` gives (`None` for other types, or an empty text).
    pub text: Option<String>,
}

/// The reader's fast path: `scan`, then the payload and text from the wire bytes. `None`: not
/// an `sdk_message` frame the fast path takes (the generated decoder does); `Some(Err)`: refused.
pub fn sdk_frame_fast(frame: &[u8]) -> Option<Result<SdkFrame, &'static str>> {
    let scan = match struct_json::scan(frame)? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let str_at = |r: std::ops::Range<usize>| struct_json::checked_str(&frame[r]).to_string();
    let r#type = scan.r#type.get().map(str_at).unwrap_or_default();
    let finite = scan.finite && scan.message.get().is_some();
    // As `Event::from_scan` then `Event::text` (wire path): the scan's range, else the blocks.
    let text = match (&scan.text, scan.inner.get()) {
        _ if r#type != "assistant" => None,
        (TextAt::One(r), _) => r.get().map(str_at),
        (TextAt::Empty, _) => None,
        (TextAt::Unknown, Some(inner)) if finite => {
            let mut t = String::new();
            struct_json::append_assistant_text(&frame[inner], &mut t);
            Some(t)
        }
        (TextAt::Unknown, _) => None,
    };
    Some(Ok(SdkFrame {
        payload: match scan.message.get() {
            Some(m) if finite => struct_json::payload(&frame[m]),
            _ => Value::Null,
        },
        offset: scan.offset.get().map(str_at),
        text: text.filter(|t| !t.is_empty()),
        r#type,
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
