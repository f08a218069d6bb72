//! The stream's hot path: a `RunStreamMessage` carrying an `sdk_message` is decoded straight
//! into JSON, without building prost's `google.protobuf.Struct` tree (a hash map and a boxed
//! value per field) only to convert it and throw it away. The profile of a 200k-event stream
//! showed protobuf decoding as its largest cost. Every other frame takes the generated decoder.
//!
//! The result equals `struct_to_json(prost decode)`: the same JSON, `Null` for a payload holding
//! a NaN or infinite number, last-wins for repeated scalar fields, unknown fields skipped.

use prost::bytes::Buf;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use serde_json::{Map, Number, Value};

/// An `sdk_message` frame: its type, payload and offset.
pub(crate) struct SdkFrame {
    pub r#type: String,
    pub payload: Value,
    pub offset: Option<String>,
}

/// `Some` when `frame` is an `sdk_message` envelope (fields 1 and 4 only), decoded; `None`
/// for any other envelope (the caller uses the generated decoder).
pub(crate) fn sdk_frame(frame: &[u8]) -> Option<Result<SdkFrame, String>> {
    let mut buf = frame;
    let mut message: Option<&[u8]> = None;
    let mut offset = None;
    while !buf.is_empty() {
        let (tag, wire) = match key(&mut buf) {
            Ok(k) => k,
            Err(e) => return Some(Err(e)),
        };
        match (tag, wire) {
            (1, WireType::LengthDelimited) => match take(&mut buf) {
                Ok(m) => message = Some(m),
                Err(e) => return Some(Err(e)),
            },
            (4, WireType::LengthDelimited) => match take(&mut buf).and_then(utf8) {
                Ok(o) => offset = Some(o),
                Err(e) => return Some(Err(e)),
            },
            (2 | 3 | 5 | 6, _) => return None,
            _ => {
                if let Err(e) = skip(wire, tag, &mut buf) {
                    return Some(Err(e));
                }
            }
        }
    }
    let message = message?;
    Some(sdk_message(message).map(|(r#type, payload)| SdkFrame {
        r#type,
        payload,
        offset,
    }))
}

/// `SdkMessage { string type = 1; Struct message = 2; }`
fn sdk_message(mut buf: &[u8]) -> Result<(String, Value), String> {
    let (mut ty, mut payload) = (String::new(), None);
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        match (tag, wire) {
            (1, WireType::LengthDelimited) => ty = take(&mut buf).and_then(utf8)?,
            (2, WireType::LengthDelimited) => payload = Some(decode_struct(take(&mut buf)?)?),
            _ => skip(wire, tag, &mut buf)?,
        }
    }
    // A NaN or infinite number anywhere makes the whole payload Null, as before.
    let payload = match payload {
        None => Value::Null,
        Some(fields) => fields.map(Value::Object).unwrap_or(Value::Null),
    };
    Ok((ty, payload))
}

/// `Struct { map<string, Value> fields = 1; }`; `Ok(None)` when a number is not finite.
fn decode_struct(mut buf: &[u8]) -> Result<Option<Map<String, Value>>, String> {
    let mut map = Map::new();
    let mut finite = true;
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        if (tag, wire) != (1, WireType::LengthDelimited) {
            skip(wire, tag, &mut buf)?;
            continue;
        }
        let mut entry = take(&mut buf)?;
        let (mut name, mut value) = (String::new(), Some(Value::Null));
        while !entry.is_empty() {
            let (tag, wire) = key(&mut entry)?;
            match (tag, wire) {
                (1, WireType::LengthDelimited) => name = take(&mut entry).and_then(utf8)?,
                (2, WireType::LengthDelimited) => value = decode_value(take(&mut entry)?)?,
                _ => skip(wire, tag, &mut entry)?,
            }
        }
        match value {
            Some(v) => {
                map.insert(name, v);
            }
            None => finite = false,
        }
    }
    Ok(finite.then_some(map))
}

/// `Value { oneof kind { null = 1; number = 2; string = 3; bool = 4; struct = 5; list = 6; } }`;
/// `Ok(None)` when a number inside is not finite.
fn decode_value(mut buf: &[u8]) -> Result<Option<Value>, String> {
    let mut value = Some(Value::Null);
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        value = match (tag, wire) {
            (1, WireType::Varint) => {
                varint(&mut buf)?;
                Some(Value::Null)
            }
            (2, WireType::SixtyFourBit) => {
                if buf.remaining() < 8 {
                    return Err("buffer underflow".to_string());
                }
                Number::from_f64(buf.get_f64_le()).map(Value::Number)
            }
            (3, WireType::LengthDelimited) => Some(Value::String(take(&mut buf).and_then(utf8)?)),
            (4, WireType::Varint) => Some(Value::Bool(varint(&mut buf)? != 0)),
            (5, WireType::LengthDelimited) => decode_struct(take(&mut buf)?)?.map(Value::Object),
            (6, WireType::LengthDelimited) => decode_list(take(&mut buf)?)?,
            _ => {
                skip(wire, tag, &mut buf)?;
                continue;
            }
        };
    }
    Ok(value)
}

/// `ListValue { repeated Value values = 1; }`
fn decode_list(mut buf: &[u8]) -> Result<Option<Value>, String> {
    let mut items = Vec::new();
    let mut finite = true;
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        if (tag, wire) != (1, WireType::LengthDelimited) {
            skip(wire, tag, &mut buf)?;
            continue;
        }
        match decode_value(take(&mut buf)?)? {
            Some(v) => items.push(v),
            None => finite = false,
        }
    }
    Ok(finite.then_some(Value::Array(items)))
}

fn key(buf: &mut &[u8]) -> Result<(u32, WireType), String> {
    decode_key(buf).map_err(|e| e.to_string())
}

fn varint(buf: &mut &[u8]) -> Result<u64, String> {
    decode_varint(buf).map_err(|e| e.to_string())
}

fn skip(wire: WireType, tag: u32, buf: &mut &[u8]) -> Result<(), String> {
    skip_field(wire, tag, buf, DecodeContext::default()).map_err(|e| e.to_string())
}

/// The next length-delimited field's bytes.
fn take<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = varint(buf)?;
    if len > buf.len() as u64 {
        return Err("buffer underflow".to_string());
    }
    let (field, rest) = buf.split_at(len as usize);
    *buf = rest;
    Ok(field)
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{self, run_stream_message::Envelope};
    use prost::Message;
    use serde_json::json;

    fn frame(payload: Value, offset: Option<&str>) -> Vec<u8> {
        let message: pbjson_types::Struct = serde_json::from_value(payload).unwrap();
        proto::RunStreamMessage {
            envelope: Some(Envelope::SdkMessage(proto::SdkMessage {
                r#type: "assistant".into(),
                message: Some(message),
            })),
            offset: offset.map(str::to_string),
        }
        .encode_to_vec()
    }

    fn as_doubles(v: Value) -> Value {
        match v {
            Value::Number(n) => Number::from_f64(n.as_f64().unwrap()).map_or(Value::Null, Value::Number),
            Value::Array(a) => Value::Array(a.into_iter().map(as_doubles).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, as_doubles(v))).collect()),
            other => other,
        }
    }

    #[test]
    fn equals_the_generated_decoder() {
        let samples = [
            json!({}),
            json!({"type": "assistant", "agent_id": "a", "n": 1.5, "i": 120, "ok": true, "no": false, "none": null,
                   "message": {"role": "assistant", "content": [{"type": "text", "text": "t0 ✓"}, 3, [false, "x", null], {}]},
                   "empty": [], "obj": {"a": {"b": {"c": [1, [2, [3]]]}}}}),
            json!({"big": 1e300, "neg": -0.25, "s": ""}),
        ];
        for (i, p) in samples.into_iter().enumerate() {
            for offset in [None, Some("17")] {
                let bytes = frame(p.clone(), offset);
                let fast = sdk_frame(&bytes).expect("an sdk_message frame").unwrap();
                let slow = proto::RunStreamMessage::decode(bytes.as_slice()).unwrap();
                let Some(Envelope::SdkMessage(m)) = slow.envelope else {
                    panic!()
                };
                assert_eq!(
                    fast.payload,
                    crate::run::struct_to_json(m.message.unwrap()),
                    "sample {i}"
                );
                // Struct numbers are doubles: compare with every input number made an f64.
                assert_eq!(fast.payload, as_doubles(p.clone()), "sample {i}");
                assert_eq!(fast.r#type, m.r#type);
                assert_eq!(fast.offset, slow.offset);
            }
        }
    }

    #[test]
    fn non_finite_numbers_null_the_payload_like_before() {
        let mut s: pbjson_types::Struct = serde_json::from_value(json!({"a": [1, {"b": 2}]})).unwrap();
        s.fields.insert(
            "bad".into(),
            pbjson_types::Value {
                kind: Some(pbjson_types::value::Kind::NumberValue(f64::NAN)),
            },
        );
        let bytes = proto::RunStreamMessage {
            envelope: Some(Envelope::SdkMessage(proto::SdkMessage {
                r#type: "x".into(),
                message: Some(s.clone()),
            })),
            offset: None,
        }
        .encode_to_vec();
        assert_eq!(sdk_frame(&bytes).unwrap().unwrap().payload, Value::Null);
        assert_eq!(crate::run::struct_to_json(s), Value::Null);
    }

    #[test]
    fn other_envelopes_and_keepalives_take_the_generated_decoder() {
        let result = proto::RunStreamMessage {
            envelope: Some(Envelope::Result(proto::RunStreamResult::default())),
            offset: Some("3".into()),
        };
        assert!(sdk_frame(&result.encode_to_vec()).is_none());
        assert!(sdk_frame(&[]).is_none(), "a keepalive (empty frame)");
        let done = proto::RunStreamMessage {
            envelope: Some(Envelope::Done(Default::default())),
            offset: None,
        };
        assert!(sdk_frame(&done.encode_to_vec()).is_none());
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let good = frame(json!({"k": "v", "l": [1, 2]}), Some("9"));
        for cut in 1..good.len() {
            // Every truncation either errs or (cut at a field boundary) decodes; never panics.
            let _ = sdk_frame(&good[..cut]);
        }
        assert!(sdk_frame(&[0x0a, 0x05, 0x01]).unwrap().is_err(), "length past the end");
        assert!(
            sdk_frame(&[0x0a, 0x03, 0x0a, 0x01, 0xff]).unwrap().is_err(),
            "type not UTF-8"
        );
    }
}
