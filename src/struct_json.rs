//! The stream's hot path: `sdk_message` frames are read straight off the wire, without
//! building prost's `google.protobuf.Struct` tree (a hash map and a boxed value per field) only
//! to convert it and throw it away. The profile of a 200k-event stream showed protobuf decoding
//! and its allocations (freed on another thread) as its largest costs.
//!
//! The reader thread [`scan`]s a frame: it checks the whole frame (wire structure, UTF-8,
//! nesting depth) and notes where its parts lie, allocating nothing. The JSON payload is built
//! later, only if asked for ([`payload`]), and an assistant message's text is read without it
//! ([`append_assistant_text`], or the range the scan found). Every other envelope takes the
//! generated decoder, and so does an `sdk_message` holding fields that protobuf merges (a
//! repeated message field, a map entry's value twice, a struct or list kind twice in a row) or a
//! group: no encoder writes those.
//!
//! The results equal `struct_to_json(prost decode)`: the same JSON, `Null` for a payload holding
//! a NaN or infinite number, last-wins for repeated scalars, oneof kinds and map keys, unknown
//! fields skipped, and the same frames refused (a known field with a wrong wire type included).

use std::ops::Range;

use prost::bytes::Buf;
use prost::encoding::{decode_varint, WireType};
use serde_json::{Map, Number, Value};

/// Deepest nesting of structs and lists accepted (prost's own recursion limit).
const MAX_DEPTH: u32 = 100;

/// Where a part of a frame lies, or nowhere: half the size of an `Option<Range<usize>>` (the
/// reader hands several over for every event). Frames are at most 1 GiB (`maxFrameBytes`), so
/// `NONE` is never a real span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span(u32, u32);

impl Span {
    pub(crate) const NONE: Span = Span(u32::MAX, u32::MAX);

    pub fn of(r: &Range<usize>) -> Span {
        Span(r.start as u32, r.end as u32)
    }

    pub fn opt(r: Option<&Range<usize>>) -> Span {
        r.map_or(Span::NONE, Span::of)
    }

    pub fn get(self) -> Option<Range<usize>> {
        (self != Span::NONE).then_some(self.0 as usize..self.1 as usize)
    }
}

/// Where the parts of a checked `sdk_message` frame lie (spans of the frame).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SdkScan {
    pub r#type: Span,
    /// The `message` Struct's bytes; `NONE` when absent.
    pub message: Span,
    pub offset: Span,
    /// No NaN or infinite number inside (otherwise the payload is `Null`).
    pub finite: bool,
    /// The `Value` of the payload's `message` key (an assistant message's body), if any.
    pub inner: Span,
    /// Where an assistant message's text is, found while its bytes are at hand.
    pub text: TextAt,
    /// The type is `assistant`.
    pub assistant: bool,
}

/// Where an assistant message's text lies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TextAt {
    /// Not looked for (not an assistant message), or spread over several blocks.
    Unknown,
    /// The message has no text.
    Empty,
    /// The text is this one block's string (a span of the frame).
    One(Span),
}

/// The payload entries the last checked `sdk_message` began with, before its `message` key.
/// A stream's events repeat them (`type`, `agent_id`, `run_id`), and bytes that passed the
/// check pass it again: a payload that begins with them is checked from after them. Whole
/// entries are self-delimiting, so a payload that begins with these bytes begins with these
/// entries.
#[derive(Debug, Default)]
pub(crate) struct Seen(Vec<u8>);

impl Seen {
    /// Longer leads are not kept (a copy per event would cost more than it saves).
    const MAX: usize = 512;
}

/// `Some` when `frame` is an `sdk_message` envelope (fields 1 and 4 only), checked whole;
/// `None` for any other envelope (the caller uses the generated decoder). `seen` carries what
/// one frame's check can spare the next one's (the same result either way).
pub(crate) fn scan(frame: &[u8], seen: &mut Seen) -> Option<Result<SdkScan, Bad>> {
    let at = |part: &[u8]| {
        let start = part.as_ptr() as usize - frame.as_ptr() as usize;
        start..start + part.len()
    };
    let (mut buf, mut message, mut offset) = match canonical_envelope(frame) {
        Some((m, o)) => (&frame[frame.len()..], Some(m), o.map(at)),
        None => (frame, None, None),
    };
    while !buf.is_empty() {
        let step = key(&mut buf).and_then(|(tag, wire)| match (tag, wire) {
            (1, WireType::LengthDelimited) => take(&mut buf).map(|m| message.replace(m).is_none()),
            (4, WireType::LengthDelimited) => take(&mut buf)
                .and_then(|o| utf8_ok(o).map(|_| offset = Some(at(o))))
                .map(|_| true),
            (1 | 4, _) => Err(WIRE),
            (2 | 3 | 5 | 6, _) => Ok(false),
            _ => skip(wire, &mut buf).map(|_| true),
        });
        match step {
            Ok(true) => {}
            Ok(false) | Err(FALLBACK) => return None,
            Err(e) => return Some(Err(e)),
        }
    }
    let mut buf = message?;
    (|| {
        let start = at(buf).start;
        let (mut ty, mut body, mut finite, mut inner) = (start..start, None, true, None);
        // The text blocks the canonical walk counted, and the type it counted them for.
        let mut counted: Option<(Range<usize>, Blocks)> = None;
        // The type as encoders write it, first: the loop starts at the payload.
        if let Some((t, rest)) = canonical_type(buf) {
            (ty, buf) = (at(t), rest);
        }
        while !buf.is_empty() {
            let (tag, wire) = key(&mut buf)?;
            match (tag, wire) {
                (1, WireType::LengthDelimited) => {
                    let t = take(&mut buf)?;
                    utf8_ok(t)?;
                    ty = at(t);
                }
                (2, WireType::LengthDelimited) => {
                    let m = take(&mut buf)?;
                    if body.is_some() {
                        return Ok(None);
                    }
                    let assistant = &frame[ty.clone()] == b"assistant";
                    let skip = match m.starts_with(&seen.0) {
                        true => seen.0.len(),
                        false => 0,
                    };
                    let found = match canonical_payload(&m[skip..], assistant) {
                        Some((found, blocks, lead)) => {
                            if lead > 0 && skip + lead <= Seen::MAX {
                                seen.0.clear();
                                seen.0.extend_from_slice(&m[..skip + lead]);
                            }
                            counted = blocks.map(|b| (ty.clone(), b));
                            (true, found)
                        }
                        None => check_struct_finding(m, 0, b"message")?,
                    };
                    (finite, body, inner) = (found.0, Some(at(m)), found.1.map(&at));
                }
                (1 | 2, _) => return Err(WIRE),
                _ => skip(wire, &mut buf)?,
            }
        }
        let assistant = &frame[ty.clone()] == b"assistant";
        let text = match &inner {
            Some(i) if finite && assistant => {
                let inner = &frame[i.clone()];
                let (blocks, one) = match counted {
                    // Counted for this type (a type field after the payload would change it).
                    Some((t, blocks)) if t == ty => blocks,
                    _ => {
                        let (mut blocks, mut one) = (0, None);
                        text_blocks(inner, |t| {
                            blocks += 1;
                            one = Some(t);
                        });
                        (blocks, one)
                    }
                };
                match (blocks, one.map(at)) {
                    (0, _) => TextAt::Empty,
                    (1, Some(r)) => TextAt::One(Span::of(&r)),
                    _ => TextAt::Unknown,
                }
            }
            None if finite && assistant => TextAt::Empty,
            _ => TextAt::Unknown,
        };
        Ok(Some(SdkScan {
            r#type: Span::of(&ty),
            message: Span::opt(body.as_ref()),
            offset: Span::opt(offset.as_ref()),
            finite,
            inner: Span::opt(inner.as_ref()),
            text,
            assistant,
        }))
    })()
    .map_or_else(|e| (e != FALLBACK).then_some(Err(e)), |s| s.map(Ok))
}

/// An envelope as encoders write it: the `sdk_message` (field 1), then perhaps its offset
/// (field 4, UTF-8), and nothing else; `None` for anything else, which the general loop reads.
fn canonical_envelope(frame: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let mut rest = frame.strip_prefix(&[0x0a])?;
    let message = take(&mut rest).ok()?;
    if rest.is_empty() {
        return Some((message, None));
    }
    let mut rest = rest.strip_prefix(&[0x22])?;
    let offset = take(&mut rest).ok()?;
    (rest.is_empty() && utf8_short(offset)).then_some((message, Some(offset)))
}

/// An `sdk_message` that starts with its type (field 1, UTF-8) followed by the payload field:
/// the type and the rest from the payload field on.
fn canonical_type(message: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut rest = message.strip_prefix(&[0x0a])?;
    let ty = take(&mut rest).ok()?;
    (rest.first() == Some(&0x12) && utf8_short(ty)).then_some((ty, rest))
}

/// The JSON of a Struct that [`scan`] checked (`Null` if it holds a non-finite number).
pub(crate) fn payload(message: &[u8]) -> Value {
    match decode_struct(message) {
        Ok(Some(fields)) => Value::Object(fields),
        _ => Value::Null,
    }
}

/// Appends the text of an assistant message's `message.content` text blocks, given the
/// `Value` of its `message` key from a checked, finite Struct: what `Event::text` reads from
/// the JSON, without it.
pub(crate) fn append_assistant_text(inner: &[u8], out: &mut String) {
    text_blocks(inner, |t| out.push_str(checked_str(t)));
}

/// Calls `f` with each text block's string, in order (see [`append_assistant_text`]).
fn text_blocks<'a>(inner: &'a [u8], mut f: impl FnMut(&'a [u8])) {
    let Some(content) = as_kind(inner, 5)
        .and_then(|m| field(m, "content"))
        .and_then(|c| as_kind(c, 6))
    else {
        return;
    };
    for item in entries(content) {
        let Some(block) = as_kind(item, 5) else { continue };
        let (mut is_text, mut text) = (false, None);
        for (name, value) in fields(block) {
            match name {
                b"type" => is_text = as_kind(value, 3) == Some(b"text".as_slice()),
                b"text" => text = as_kind(value, 3),
                _ => {}
            }
        }
        if let Some(t) = text.filter(|_| is_text) {
            f(t);
        }
    }
}

/// A `Value` that is exactly its one length-delimited field `kind` (3, 5 or 6): its body.
#[inline(always)]
fn one_kind(value: &[u8], kind: u8) -> Option<&[u8]> {
    let mut body = value.strip_prefix(&[kind << 3 | 2])?;
    let inner = take(&mut body).ok()?;
    body.is_empty().then_some(inner)
}

/// The next field of `buf` if it is field 1, length-delimited (a Struct entry, a list item).
#[inline(always)]
fn next_item<'a>(buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    let mut rest = buf.strip_prefix(&[0x0a])?;
    let item = take(&mut rest).ok()?;
    *buf = rest;
    Some(item)
}

/// The repeated field 1 (Struct entries, list items) of a checked message.
fn entries(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    items(buf).map_while(Result::ok)
}

/// The repeated field 1 of a message (a Struct's entries, a ListValue's items), other fields
/// skipped; a malformed field ends it with its error.
#[inline]
fn items(mut buf: &[u8]) -> impl Iterator<Item = Result<&[u8], Bad>> {
    std::iter::from_fn(move || {
        // The common case: field 1's one-byte key (no general key decoding).
        if let Some((&0x0a, mut rest)) = buf.split_first() {
            let item = take(&mut rest);
            buf = if item.is_ok() { rest } else { &[] };
            return Some(item);
        }
        while !buf.is_empty() {
            let item = key(&mut buf).and_then(|(tag, wire)| match (tag, wire) {
                (1, WireType::LengthDelimited) => take(&mut buf).map(Some),
                (1, _) => Err(WIRE),
                _ => skip(wire, &mut buf).map(|_| None),
            });
            match item {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => {}
                Err(e) => {
                    buf = &[];
                    return Some(Err(e));
                }
            }
        }
        None
    })
}

/// The (key, `Value` bytes) entries of a checked Struct, in wire order.
fn fields(strukt: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    entries(strukt).map(|mut entry| {
        if let Some(kv) = canonical_entry(entry) {
            return kv;
        }
        let (mut k, mut v): (&[u8], &[u8]) = (b"", b"");
        while !entry.is_empty() {
            let Ok((tag, wire)) = key(&mut entry) else { break };
            let step = match (tag, wire) {
                (1, WireType::LengthDelimited) => take(&mut entry).map(|x| k = x),
                (2, WireType::LengthDelimited) => take(&mut entry).map(|x| v = x),
                _ => skip(wire, &mut entry),
            };
            if step.is_err() {
                break;
            }
        }
        (k, v)
    })
}

/// The next Struct entry of `buf` as encoders write it (field 1, holding a key then a value
/// and nothing else). Entries whose three lengths are one byte each, nearly all of them, are
/// read with one bounds check and their lengths checked against each other.
#[inline(always)]
fn next_entry<'a>(buf: &mut &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
    let b: &'a [u8] = buf;
    if let [0x0a, n, 0x0a, k, ..] = *b {
        let (n, k) = (usize::from(n), usize::from(k));
        if n < 0x80 && k < 0x80 && 4 + k <= n {
            if let Some(entry) = b.get(2..2 + n) {
                // entry: 0x0a, k, key, 0x12, v, value; one-byte lengths add up to n.
                if entry[2 + k] == 0x12 && usize::from(entry[3 + k]) == n - 4 - k {
                    *buf = &b[2 + n..];
                    return Some((&entry[2..2 + k], &entry[4 + k..]));
                }
            }
        }
    }
    canonical_entry(next_item(buf)?)
}

/// An entry as encoders write it, key then value and nothing else (the common case, read
/// without the general loop).
#[inline(always)]
fn canonical_entry(mut entry: &[u8]) -> Option<(&[u8], &[u8])> {
    let k = entry
        .strip_prefix(&[0x0a])
        .and_then(|mut e| take(&mut e).ok().map(|k| (k, e)));
    let (k, rest) = k?;
    entry = rest.strip_prefix(&[0x12])?;
    let v = take(&mut entry).ok()?;
    entry.is_empty().then_some((k, v))
}

/// The `Value` bytes of a checked Struct's key (the last entry with it wins, as in a map).
fn field<'a>(strukt: &'a [u8], name: &str) -> Option<&'a [u8]> {
    fields(strukt)
        .filter(|(k, _)| *k == name.as_bytes())
        .last()
        .map(|(_, v)| v)
}

/// The body of a checked `Value` if its kind (the last one set wins) is `kind`.
fn as_kind(mut value: &[u8], kind: u32) -> Option<&[u8]> {
    // The common case: the value is that one field.
    if let Some(mut body) = value.strip_prefix(&[(kind << 3 | 2) as u8]) {
        if let Ok(b) = take(&mut body) {
            if body.is_empty() {
                return Some(b);
            }
        }
    }
    let mut last: Option<(u32, &[u8])> = None;
    while !value.is_empty() {
        let (tag, wire) = key(&mut value).ok()?;
        match (tag, wire) {
            (3 | 5 | 6, WireType::LengthDelimited) => last = Some((tag, take(&mut value).ok()?)),
            (1 | 4, WireType::Varint) | (2, WireType::SixtyFourBit) => {
                skip(wire, &mut value).ok()?;
                last = Some((tag, b""));
            }
            _ => skip(wire, &mut value).ok()?,
        }
    }
    last.filter(|(t, _)| *t == kind).map(|(_, b)| b)
}

/// How many text blocks an assistant message has, and the last one's string.
type Blocks<'a> = (usize, Option<&'a [u8]>);

/// The payload's `message` value, an assistant message's text blocks, and how many bytes the
/// entries before the first `message` key take (see [`Seen`]).
type Payload<'a> = (Option<&'a [u8]>, Option<Blocks<'a>>, usize);

/// [`canonical_struct`] for the `sdk_message` payload (depth 0), giving the value of its
/// `message` key and, for an assistant message, its text blocks as [`text_blocks`] finds them,
/// counted in the same walk (a second walk cost as much as the check).
fn canonical_payload(mut buf: &[u8], assistant: bool) -> Option<Payload<'_>> {
    let (mut found, mut blocks, total) = (None, None, buf.len());
    let mut lead = None;
    while !buf.is_empty() {
        let before = buf.len();
        let (name, value) = next_entry(&mut buf)?;
        if !utf8_short(name) {
            return None;
        }
        if name == b"message" {
            lead.get_or_insert(total - before);
            found = Some(value);
            blocks = match assistant {
                true => Some(canonical_assistant(value)?),
                false => canonical_value(value, 1).then_some(None)?,
            };
        } else if !canonical_value(value, 1) {
            return None;
        }
    }
    Some((found, blocks, lead.unwrap_or(total)))
}

/// The payload's `message` value (depth 1) of an assistant message, checked as
/// [`canonical_value`] does, and its text blocks; `None` also when it is not a Struct.
fn canonical_assistant(value: &[u8]) -> Option<Blocks<'_>> {
    let mut message = one_kind(value, 5)?;
    let mut blocks = (0, None);
    while !message.is_empty() {
        let (name, value) = next_entry(&mut message)?;
        if !utf8_short(name) {
            return None;
        }
        if name == b"content" {
            // The last one wins, as in a map.
            blocks = canonical_content(value)?;
        } else if !canonical_value(value, 2) {
            return None;
        }
    }
    Some(blocks)
}

/// The message's `content` value (depth 2): a list of blocks, or any other value (no text).
fn canonical_content(value: &[u8]) -> Option<Blocks<'_>> {
    let Some(mut list) = one_kind(value, 6) else {
        return canonical_value(value, 2).then_some((0, None));
    };
    let mut blocks = (0, None);
    while !list.is_empty() {
        let item = next_item(&mut list)?;
        let Some(mut block) = one_kind(item, 5) else {
            canonical_value(item, 3).then_some(())?;
            continue;
        };
        let (mut is_text, mut text) = (false, None);
        while !block.is_empty() {
            let (name, value) = next_entry(&mut block)?;
            if !utf8_short(name) || !canonical_value(value, 4) {
                return None;
            }
            match name {
                b"type" => is_text = one_kind(value, 3)? == b"text",
                b"text" => text = Some(one_kind(value, 3)?),
                _ => {}
            }
        }
        if let Some(t) = text.filter(|_| is_text) {
            blocks = (blocks.0 + 1, Some(t));
        }
    }
    Some(blocks)
}

/// The check of [`check_struct`] for a Struct encoded as encoders write it (each entry a key
/// then a value, each `Value` its one kind, each list item field 1) with finite numbers only:
/// one tight walk, a fraction of the general check's cost. `true`: valid and finite; `false`
/// for anything else, malformed or not, which the general check then decides. It accepts only
/// what the general check accepts.
fn canonical_struct(mut buf: &[u8], depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    while !buf.is_empty() {
        let Some((name, value)) = next_entry(&mut buf) else {
            return false;
        };
        if !utf8_short(name) || !canonical_value(value, depth + 1) {
            return false;
        }
    }
    true
}

/// A `Value` for [`canonical_struct`]: exactly one kind, a finite number. Short strings, the
/// most common values, are checked inline; anything else takes a call.
#[inline(always)]
fn canonical_value(value: &[u8], depth: u32) -> bool {
    match *value {
        // A string with a one-byte length, which must then be the rest of the value.
        [0x1a, n, ref s @ ..] if n < 0x80 => usize::from(n) == s.len() && utf8_short(s),
        _ => canonical_other(value, depth),
    }
}

#[inline(never)]
fn canonical_other(value: &[u8], depth: u32) -> bool {
    let Some((&head, mut rest)) = value.split_first() else {
        return false;
    };
    match head {
        // A (long) string, struct or list: its one length-delimited field.
        0x1a | 0x2a | 0x32 => {
            let Ok(body) = take(&mut rest) else { return false };
            rest.is_empty()
                && match head {
                    0x1a => utf8_short(body),
                    0x2a => canonical_struct(body, depth),
                    _ => canonical_list(body, depth),
                }
        }
        // Null or a bool: a one-byte varint.
        0x08 | 0x20 => matches!(rest, [b] if *b < 0x80),
        // A number.
        0x11 => rest
            .try_into()
            .is_ok_and(|b: [u8; 8]| f64::from_le_bytes(b).is_finite()),
        _ => false,
    }
}

fn canonical_list(mut buf: &[u8], depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    while !buf.is_empty() {
        match next_item(&mut buf) {
            Some(item) if canonical_value(item, depth + 1) => {}
            _ => return false,
        }
    }
    true
}

/// Checks a Struct as [`decode_struct`] reads it; `Ok(false)` when a number is not finite.
fn check_struct(buf: &[u8], depth: u32) -> Result<bool, Bad> {
    check_struct_finding(buf, depth, b"").map(|(finite, _)| finite)
}

/// [`check_struct`], also giving the `Value` bytes of the key `find` (the last one wins).
fn check_struct_finding<'a>(buf: &'a [u8], depth: u32, find: &[u8]) -> Result<(bool, Option<&'a [u8]>), Bad> {
    if depth > MAX_DEPTH {
        return Err("recursion limit reached");
    }
    // The keys whose last value so far holds a non-finite number: a later entry with the same
    // key replaces it (map semantics). Allocates only when there is one.
    let (mut non_finite, mut found): (Vec<&[u8]>, _) = (Vec::new(), None);
    let mut note = |name: &'a [u8], finite: bool| {
        if !finite {
            non_finite.push(name);
        } else if !non_finite.is_empty() {
            non_finite.retain(|k| *k != name);
        }
    };
    for entry in items(buf) {
        let mut entry = entry?;
        if let Some((name, value)) = canonical_entry(entry) {
            utf8_ok(name)?;
            note(name, check_value(value, depth + 1)?);
            if !find.is_empty() && name == find {
                found = Some(value);
            }
            continue;
        }
        let (mut name, mut value, mut entry_finite): (&[u8], Option<&[u8]>, bool) = (b"", None, true);
        while !entry.is_empty() {
            let (tag, wire) = key(&mut entry)?;
            match (tag, wire) {
                (1, WireType::LengthDelimited) => {
                    name = take(&mut entry)?;
                    utf8_ok(name)?;
                }
                // A second value is merged into the first by protobuf.
                (2, WireType::LengthDelimited) if value.is_some() => return Err(FALLBACK),
                (2, WireType::LengthDelimited) => {
                    let v = take(&mut entry)?;
                    entry_finite = check_value(v, depth + 1)?;
                    value = Some(v);
                }
                (1 | 2, _) => return Err(WIRE),
                _ => skip(wire, &mut entry)?,
            }
        }
        note(name, entry_finite);
        if !find.is_empty() && name == find {
            // No value is an empty one (JSON null); `entry`, emptied, still lies in the frame,
            // where the caller takes its range (a static `b""` would not).
            found = Some(value.unwrap_or(entry));
        }
    }
    Ok((non_finite.is_empty(), found))
}

fn check_value(mut buf: &[u8], depth: u32) -> Result<bool, Bad> {
    // The common case first: a string, struct or list that is the value's only field.
    if let Some((&head, mut rest)) = buf.split_first() {
        if matches!(head, 0x1a | 0x2a | 0x32) {
            if let Ok(body) = take(&mut rest) {
                if rest.is_empty() {
                    return match head {
                        0x1a => utf8_ok(body).map(|_| true),
                        0x2a => check_struct(body, depth),
                        _ => check_list(body, depth),
                    };
                }
            }
        }
    }
    let (mut finite, mut kind) = (true, 0);
    while !buf.is_empty() {
        let (tag, wire) = key(&mut buf)?;
        // Protobuf merges a struct or list into the same kind just before it.
        if matches!(tag, 5 | 6) && tag == kind {
            return Err(FALLBACK);
        }
        if (1..=6).contains(&tag) {
            kind = tag;
        }
        // Like the decoder, a later kind replaces an earlier one, non-finite number included.
        match (tag, wire) {
            (1 | 4, WireType::Varint) => finite = varint(&mut buf).map(|_| true)?,
            (2, WireType::SixtyFourBit) => {
                if buf.remaining() < 8 {
                    return Err(UNDERFLOW);
                }
                finite = buf.get_f64_le().is_finite();
            }
            (3, WireType::LengthDelimited) => finite = utf8_ok(take(&mut buf)?).map(|_| true)?,
            (5, WireType::LengthDelimited) => finite = check_struct(take(&mut buf)?, depth)?,
            (6, WireType::LengthDelimited) => finite = check_list(take(&mut buf)?, depth)?,
            (1..=6, _) => return Err(WIRE),
            _ => skip(wire, &mut buf)?,
        }
    }
    Ok(finite)
}

fn check_list(buf: &[u8], depth: u32) -> Result<bool, Bad> {
    if depth > MAX_DEPTH {
        return Err("recursion limit reached");
    }
    let mut finite = true;
    for item in items(buf) {
        finite &= check_value(item?, depth + 1)?;
    }
    Ok(finite)
}

/// `Struct { map<string, Value> fields = 1; }`; `Ok(None)` when a number is not finite.
fn decode_struct(buf: &[u8]) -> Result<Option<Map<String, Value>>, Bad> {
    let mut map = Map::new();
    // As in `check_struct_finding`: a later entry with the same key replaces a non-finite one.
    let mut non_finite = Vec::new();
    for entry in items(buf) {
        let mut entry = entry?;
        let (mut name, mut value) = (String::new(), Some(Value::Null));
        while !entry.is_empty() {
            let (tag, wire) = key(&mut entry)?;
            match (tag, wire) {
                (1, WireType::LengthDelimited) => name = take(&mut entry).and_then(utf8)?,
                (2, WireType::LengthDelimited) => value = decode_value(take(&mut entry)?)?,
                _ => skip(wire, &mut entry)?,
            }
        }
        match value {
            Some(v) => {
                non_finite.retain(|k| *k != name);
                map.insert(name, v);
            }
            None => {
                map.remove(&name);
                non_finite.push(name);
            }
        }
    }
    Ok(non_finite.is_empty().then_some(map))
}

/// `Value { oneof kind { null = 1; number = 2; string = 3; bool = 4; struct = 5; list = 6; } }`;
/// `Ok(None)` when a number inside is not finite.
fn decode_value(mut buf: &[u8]) -> Result<Option<Value>, Bad> {
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
                    return Err(UNDERFLOW);
                }
                Number::from_f64(buf.get_f64_le()).map(Value::Number)
            }
            (3, WireType::LengthDelimited) => Some(Value::String(take(&mut buf).and_then(utf8)?)),
            (4, WireType::Varint) => Some(Value::Bool(varint(&mut buf)? != 0)),
            (5, WireType::LengthDelimited) => decode_struct(take(&mut buf)?)?.map(Value::Object),
            (6, WireType::LengthDelimited) => decode_list(take(&mut buf)?)?,
            _ => {
                skip(wire, &mut buf)?;
                continue;
            }
        };
    }
    Ok(value)
}

/// `ListValue { repeated Value values = 1; }`
fn decode_list(buf: &[u8]) -> Result<Option<Value>, Bad> {
    let mut values = Vec::new();
    let mut finite = true;
    for item in items(buf) {
        match decode_value(item?)? {
            Some(v) => values.push(v),
            None => finite = false,
        }
    }
    Ok(finite.then_some(Value::Array(values)))
}

/// A malformed frame, said in a few words.
type Bad = &'static str;

const UNDERFLOW: Bad = "buffer underflow";
/// A known field with another wire type than its own (the generated decoder refuses it too).
const WIRE: Bad = "invalid wire type";
/// Not refused, but not for the fast path: fields that protobuf merges, or a group (no encoder
/// writes either); [`scan`] leaves the frame to the generated decoder.
const FALLBACK: Bad = "merged fields or a group";

#[inline(always)]
fn key(buf: &mut &[u8]) -> Result<(u32, WireType), Bad> {
    let k = varint(buf)?;
    let wire = WireType::try_from(k & 7).map_err(|_| "invalid wire type")?;
    // Keys beyond 32 bits are refused, as the generated decoder does.
    match u32::try_from(k) {
        Ok(k) if k >> 3 > 0 => Ok((k >> 3, wire)),
        _ => Err("invalid tag"),
    }
}

#[inline(always)]
fn varint(buf: &mut &[u8]) -> Result<u64, Bad> {
    match **buf {
        [b, ref rest @ ..] if b < 0x80 => {
            *buf = rest;
            Ok(u64::from(b))
        }
        // Two bytes: the length of a frame's message or Struct (128 bytes to 16 KiB).
        [b0, b1, ref rest @ ..] if b1 < 0x80 => {
            *buf = rest;
            Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
        }
        _ => decode_varint(buf).map_err(|_| "invalid varint"),
    }
}

#[inline]
fn skip(wire: WireType, buf: &mut &[u8]) -> Result<(), Bad> {
    let fixed = |buf: &mut &[u8], n: usize| match buf.get(n..) {
        Some(rest) => {
            *buf = rest;
            Ok(())
        }
        None => Err(UNDERFLOW),
    };
    match wire {
        WireType::Varint => varint(buf).map(drop),
        WireType::SixtyFourBit => fixed(buf, 8),
        WireType::ThirtyTwoBit => fixed(buf, 4),
        WireType::LengthDelimited => take(buf).map(drop),
        WireType::StartGroup => Err(FALLBACK),
        WireType::EndGroup => Err("unexpected end group tag"),
    }
}

/// The next length-delimited field's bytes.
#[inline(always)]
fn take<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], Bad> {
    let len = varint(buf)?;
    if len > buf.len() as u64 {
        return Err(UNDERFLOW);
    }
    let (field, rest) = buf.split_at(len as usize);
    *buf = rest;
    Ok(field)
}

/// Whether a key or string value is UTF-8. Most are short and ASCII, tested two words at a
/// time inline (the last word overlaps the others for lengths that are not a multiple of 8):
/// `is_ascii`'s out-of-line call and alignment handling cost more than the test here.
#[inline(always)]
fn utf8_short(b: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = b.len();
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
    let ascii = if n >= 8 {
        let (mut acc, mut i) = (word(n - 8), 0);
        while i + 16 <= n {
            acc |= word(i) | word(i + 8);
            i += 16;
        }
        if i + 8 <= n {
            acc |= word(i);
        }
        acc & HIGH == 0
    } else if n >= 4 {
        let half = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        (half(0) | half(n - 4)) & HIGH as u32 == 0
    } else {
        b.iter().all(|c| *c < 0x80)
    };
    ascii || std::str::from_utf8(b).is_ok()
}

/// [`utf8_short`] as the general check's `Result`.
#[inline]
fn utf8_ok(bytes: &[u8]) -> Result<(), Bad> {
    if utf8_short(bytes) {
        Ok(())
    } else {
        Err("a string is not UTF-8")
    }
}

/// A string the scan checked, as `&str` (ASCII, the common case, without a second full check).
#[inline]
pub(crate) fn checked_str(bytes: &[u8]) -> &str {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    } else {
        std::str::from_utf8(bytes).unwrap_or_default()
    }
}

fn utf8(bytes: &[u8]) -> Result<String, Bad> {
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| "a string is not UTF-8")
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// [`super::scan`] with nothing seen, held equal to a second scan of the same frame that
    /// has seen it (its lead skipped): every test of the scan tests both.
    fn scan(frame: &[u8]) -> Option<Result<SdkScan, Bad>> {
        let mut seen = Seen::default();
        let first = super::scan(frame, &mut seen);
        assert_eq!(super::scan(frame, &mut seen), first, "seen: {seen:?}");
        first
    }

    struct Decoded {
        r#type: String,
        payload: Value,
        offset: Option<String>,
    }

    /// The reader's scan, then the consumer's decode, as one call.
    fn sdk_frame(frame: &[u8]) -> Option<Result<Decoded, Bad>> {
        let text = |r: Range<usize>| String::from_utf8(frame[r].to_vec()).unwrap();
        Some(scan(frame)?.map(|s| Decoded {
            r#type: text(s.r#type.get().unwrap()),
            payload: match (s.message.get(), s.finite) {
                (Some(m), true) => payload(&frame[m]),
                _ => Value::Null,
            },
            offset: s.offset.get().map(text),
        }))
    }

    /// A length-delimited field, for frames no encoder would write.
    pub(crate) fn ld(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag << 3 | 2];
        prost::encoding::encode_varint(body.len() as u64, &mut out);
        out.extend_from_slice(body);
        out
    }

    /// A `Value` holding a string.
    fn sv(s: &str) -> Vec<u8> {
        ld(3, s.as_bytes())
    }

    /// A Struct entry: key, then `Value` bytes.
    fn entry(k: &str, v: &[u8]) -> Vec<u8> {
        ld(1, &[ld(1, k.as_bytes()), ld(2, v)].concat())
    }

    /// A content block `{"type": ty, "text": text}` as a `Value`.
    fn block(ty: &str, text: &str) -> Vec<u8> {
        ld(5, &[entry("type", &sv(ty)), entry("text", &sv(text))].concat())
    }

    /// A `Value` holding a number.
    fn number(f: f64) -> Vec<u8> {
        [vec![0x11], f.to_le_bytes().to_vec()].concat()
    }

    /// A `Value` holding a list of `Value`s.
    fn list(items: &[Vec<u8>]) -> Vec<u8> {
        ld(6, &items.iter().map(|b| ld(1, b)).collect::<Vec<_>>().concat())
    }

    #[test]
    fn repeated_message_fields_take_the_generated_decoder() {
        let strukt = |k: &[u8], v: &[u8]| ld(1, &[ld(1, k), ld(2, &ld(3, v))].concat());
        let sdk = |payloads: &[Vec<u8>]| {
            let mut m = ld(1, b"assistant");
            for p in payloads {
                m.extend(ld(2, p));
            }
            m
        };
        // The payload Struct twice: protobuf merges the two maps.
        let twice = ld(1, &sdk(&[strukt(b"a", b"1"), strukt(b"b", b"2")]));
        assert!(scan(&twice).is_none());
        let generated = proto::RunStreamMessage::decode(twice.as_slice()).unwrap();
        let Some(Envelope::SdkMessage(m)) = generated.envelope else {
            panic!()
        };
        assert_eq!(m.message.unwrap().fields.len(), 2, "merged");
        // The sdk_message itself twice.
        let one = ld(1, &sdk(&[strukt(b"a", b"1")]));
        assert!(scan(&[one.clone(), one.clone()].concat()).is_none());
        assert!(scan(&one).unwrap().is_ok());
    }

    #[test]
    fn nesting_is_bounded_not_a_stack_overflow() {
        let nested = |levels: usize| {
            let mut v = ld(3, b"leaf"); // Value{string}
            for _ in 0..levels {
                v = ld(6, &ld(1, &v)); // Value{list: [v]}
            }
            let strukt = ld(1, &[ld(1, b"k"), ld(2, &v)].concat());
            ld(1, &[ld(1, b"assistant"), ld(2, &strukt)].concat())
        };
        assert!(scan(&nested(60)).unwrap().is_ok());
        assert_eq!(scan(&nested(150)).unwrap().unwrap_err(), "recursion limit reached");
        assert_eq!(scan(&nested(100_000)).unwrap().unwrap_err(), "recursion limit reached");
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

    /// What the generated decoder makes of a frame the fast path refuses or leaves to it.
    fn generated(frame: &[u8]) -> Result<proto::RunStreamMessage, prost::DecodeError> {
        proto::RunStreamMessage::decode(frame)
    }

    #[test]
    fn wrong_wire_types_are_refused_like_the_generated_decoder() {
        // Found by fuzz/struct_json: a known field with another wire type was skipped as unknown.
        let fuzzed = [
            10, 36, 8, 8, 8, 8, 8, 8, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120, 120,
            120, 120, 120, 120, 120, 8, 8, 8, 8, 8, 8, 8, 8, 8, 13, 8, 8, 47, 32,
        ];
        let entry = |v: &[u8]| ld(1, &[ld(1, b"k"), ld(2, v)].concat());
        let sdk = |body: &[u8]| ld(1, &[ld(1, b"assistant"), ld(2, body)].concat());
        let frames: [Vec<u8>; 7] = [
            fuzzed.to_vec(),
            [sdk(&[]), vec![4 << 3, 1]].concat(), // offset as a varint
            [sdk(&[]), vec![1 << 3, 1]].concat(), // sdk_message as a varint
            ld(1, &[ld(1, b"x"), vec![2 << 3 | 5, 0, 0, 0, 0]].concat()), // payload as fixed32
            sdk(&[1 << 3, 1]),                    // Struct entries as a varint
            sdk(&ld(1, &[1 << 3, 1])),            // an entry's key as a varint
            sdk(&entry(&[3 << 3, 1])),            // a string Value as a varint
        ];
        for (i, f) in frames.iter().enumerate() {
            assert_eq!(scan(f).unwrap().unwrap_err(), WIRE, "frame {i}");
            assert!(generated(f).is_err(), "frame {i}");
        }
        // A key beyond 32 bits (a field number that fits, once shifted).
        let mut wide = sdk(&[]);
        wide.extend([0x80, 0x80, 0x80, 0x80, 0x20, 0]);
        assert!(scan(&wide).unwrap().is_err());
        assert!(generated(&wide).is_err());
    }

    #[test]
    fn fields_protobuf_merges_and_groups_take_the_generated_decoder() {
        let entry = |parts: &[Vec<u8>]| ld(1, &[vec![ld(1, b"k")], parts.to_vec()].concat().concat());
        let sdk = |body: &[u8]| ld(1, &[ld(1, b"assistant"), ld(2, body)].concat());
        let inner = |k: &[u8]| ld(1, &[ld(1, k), ld(2, &ld(3, b"v"))].concat());
        let frames = [
            // An entry's value twice: merged (the second has no kind, so the first stays).
            sdk(&entry(&[ld(2, &ld(3, b"x")), ld(2, &[])])),
            // A struct kind twice in a row: the maps are merged.
            sdk(&entry(&[ld(2, &[ld(5, &inner(b"a")), ld(5, &inner(b"b"))].concat())])),
            // A list kind twice, an unknown field between: the lists are joined.
            sdk(&entry(&[ld(
                2,
                &[ld(6, &ld(1, &ld(3, b"a"))), vec![7 << 3, 0], ld(6, &[])].concat(),
            )])),
            // A group (an unknown field).
            [sdk(&[]), vec![9 << 3 | 3, 9 << 3 | 4]].concat(),
        ];
        for (i, f) in frames.iter().enumerate() {
            assert!(scan(f).is_none(), "frame {i}: {:?}", scan(f));
            assert!(generated(f).is_ok(), "frame {i}");
        }
        let Some(Envelope::SdkMessage(m)) = generated(&frames[1]).unwrap().envelope else {
            panic!()
        };
        assert_eq!(
            crate::run::struct_to_json(m.message.unwrap()),
            json!({"k": {"a": "v", "b": "v"}})
        );
        // A struct then a list then a struct: the last kind replaces, no merge; the fast path.
        let replaced = sdk(&entry(&[ld(
            2,
            &[ld(5, &inner(b"a")), ld(6, &[]), ld(5, &inner(b"b"))].concat(),
        )]));
        assert_eq!(sdk_frame(&replaced).unwrap().unwrap().payload, json!({"k": {"b": "v"}}));
    }

    #[test]
    fn a_message_key_without_a_value_is_null_not_a_panic() {
        // Found by fuzz/struct_json: the range of the missing value was taken from a static
        // empty slice, outside the frame (an overflow, then an out-of-range slice).
        let no_value = ld(1, &[ld(1, b"message"), ld(6, b"x")].concat());
        let frame = ld(1, &[ld(1, b"assistant"), ld(2, &no_value)].concat());
        let fast = sdk_frame(&frame).unwrap().unwrap();
        assert_eq!(fast.payload, json!({"message": null}));
        let scanned = scan(&frame).unwrap().unwrap();
        assert_eq!(scanned.text, TextAt::Empty);
        assert!(scanned.inner.get().unwrap().is_empty());
    }

    #[test]
    fn a_key_repeated_after_a_non_finite_value_replaces_it() {
        // Found by fuzz/struct_json: the map keeps the last value of a key, so a NaN that a later
        // entry replaces does not null the payload.
        let nan = [vec![2 << 3 | 1], f64::NAN.to_le_bytes().to_vec()].concat();
        let entry = |k: &[u8], v: &[u8]| ld(1, &[ld(1, k), ld(2, v)].concat());
        let sdk = |body: Vec<u8>| ld(1, &[ld(1, b"x"), ld(2, &body)].concat());
        let replaced = sdk([
            entry(b"a", &nan),
            entry(b"b", &nan),
            entry(b"a", &ld(3, b"s")),
            entry(b"b", &[]),
        ]
        .concat());
        let kept = sdk([entry(b"a", &ld(3, b"s")), entry(b"a", &nan)].concat());
        for (frame, want) in [(replaced, json!({"a": "s", "b": null})), (kept, Value::Null)] {
            assert_eq!(sdk_frame(&frame).unwrap().unwrap().payload, want);
            let Some(Envelope::SdkMessage(m)) = proto::RunStreamMessage::decode(frame.as_slice()).unwrap().envelope
            else {
                panic!()
            };
            assert_eq!(crate::run::struct_to_json(m.message.unwrap()), want);
        }
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
        // A string deep in the payload that is not UTF-8 fails the scan, not a later decode.
        let bad = ld(1, &[ld(1, b"k"), ld(2, &ld(3, &[0xc3, 0x28]))].concat());
        let frame = ld(1, &[ld(1, b"assistant"), ld(2, &bad)].concat());
        assert_eq!(scan(&frame).unwrap().unwrap_err(), "a string is not UTF-8");
    }

    /// The one-walk check of an assistant payload gives what the general check and text walk
    /// give, and leaves every case it does not take to them.
    #[test]
    fn canonical_payload_equals_the_general_check_and_walk() {
        let payload = |message: &[u8]| [entry("type", &sv("assistant")), entry("message", message)].concat();
        let taken = [
            payload(&ld(
                5,
                &entry("content", &list(&[block("text", "a"), block("text", "b")])),
            )),
            payload(&ld(
                5,
                &entry(
                    "content",
                    &list(&[sv("plain"), block("tool_use", "x"), block("text", "c")]),
                ),
            )),
            payload(&ld(
                5,
                &[
                    entry("content", &list(&[block("text", "old")])),
                    entry("n", &number(2.5)),
                ]
                .concat(),
            )),
            payload(&ld(5, &entry("content", &sv("not a list")))),
            [
                payload(&ld(5, &entry("content", &list(&[block("text", "first")])))),
                payload(&ld(5, &[])),
            ]
            .concat(),
            [
                entry("message", &ld(5, &entry("content", &list(&[block("text", "x")])))),
                entry("k", &[0x08, 0]),
            ]
            .concat(),
            payload(&ld(
                5,
                &[
                    entry("role", &sv("assistant")),
                    entry("content", &list(&[block("text", "old")])),
                    entry("content", &list(&[block("text", "new")])),
                ]
                .concat(),
            )),
            payload(&ld(5, &entry("content", &list(&[])))),
            payload(&ld(5, &entry("role", &sv("assistant")))),
            payload(&ld(
                5,
                &entry("content", &list(&[ld(5, &entry("text", &sv("no type")))])),
            )),
            // Lengths of two bytes and more: a long text, a long key, a long string elsewhere.
            payload(&ld(5, &entry("content", &list(&[block("text", &"é".repeat(300))])))),
            [payload(&ld(5, &[])), entry(&"k".repeat(200), &sv(&"v".repeat(1000)))].concat(),
            // An entry whose length is written in two bytes though it fits in one.
            [
                payload(&ld(5, &[])),
                vec![0x0a, 0x87, 0x00, 0x0a, 0x01, b'k', 0x12, 0x02, 0x1a, 0x00],
            ]
            .concat(),
        ];
        let left = [
            payload(&sv("a message that is not a Struct")),
            payload(&ld(5, &entry("content", &list(&[ld(5, &entry("type", &ld(5, b"")))])))),
            payload(&ld(5, &entry("n", &number(f64::NAN)))),
            payload(&ld(
                5,
                &[ld(1, &[ld(1, b"content"), ld(2, &list(&[]))].concat()), vec![0x18, 1]].concat(),
            )),
        ];
        fn general(m: &[u8]) -> (bool, &[u8], Blocks<'_>) {
            let (finite, inner) = check_struct_finding(m, 0, b"message").unwrap();
            let inner = inner.unwrap();
            let (mut n, mut last) = (0, None);
            text_blocks(inner, |t| {
                n += 1;
                last = Some(t);
            });
            (finite, inner, (n, last))
        }
        for (i, m) in taken.iter().enumerate() {
            let walked = canonical_payload(m, true).expect("the canonical walk takes it");
            let (inner, blocks, lead) = walked;
            let (finite, want_inner, want_blocks) = general(m);
            assert!(finite, "{i}");
            assert_eq!((inner, blocks), (Some(want_inner), Some(want_blocks)), "{i}");
            // The lead ends where the first `message` entry starts.
            let first = next_entry(&mut &m[lead..]).map(|(k, _)| k);
            assert_eq!(first, Some(b"message".as_slice()), "{i}");
            // Not an assistant message: the same check, no blocks.
            assert_eq!(canonical_payload(m, false), Some((inner, None, lead)), "{i}");
        }
        for (i, m) in left.iter().enumerate() {
            assert_eq!(canonical_payload(m, true), None, "{i}");
            let _ = general(m); // the general check still takes it
        }
    }

    #[test]
    fn utf8_short_agrees_with_std_at_every_length_and_position() {
        for n in 0..=70 {
            let ascii = vec![b'a'; n];
            assert!(utf8_short(&ascii), "{n}");
            for at in 0..n {
                for (bytes, what) in [(&[0xffu8][..], "0xff"), (&[0x80], "0x80"), ("é".as_bytes(), "é")] {
                    let mut b = ascii.clone();
                    let end = (at + bytes.len()).min(n);
                    b[at..end].copy_from_slice(&bytes[..end - at]);
                    let std = std::str::from_utf8(&b).is_ok();
                    assert_eq!(utf8_short(&b), std, "{n} {at} {what}");
                }
            }
        }
    }

    #[test]
    fn what_one_frame_spares_the_next_does_not_change_its_result() {
        // Entries in this order (a Struct built from JSON has them in any order).
        let sdk = |entries: &[Vec<u8>]| ld(1, &[ld(1, b"assistant"), ld(2, &entries.concat())].concat());
        let message = |text: &str| {
            let body = [
                entry("role", &sv("assistant")),
                entry("content", &list(&[block("text", text)])),
            ];
            entry("message", &ld(5, &body.concat()))
        };
        let lead = |agent: &str| [entry("type", &sv("assistant")), entry("agent_id", &sv(agent))];
        let a = sdk(&[&lead("agent-1")[..], &[message("hello")]].concat());
        // The same lead, then a text that is not UTF-8 (its lengths unchanged).
        let mut bad = sdk(&[&lead("agent-1")[..], &[message("hellx")]].concat());
        let x = bad.iter().rposition(|b| *b == b'x').unwrap();
        bad[x] = 0xff;
        // A lead as long as the seen one, with an agent id that is not UTF-8.
        let mut bad_lead = sdk(&[&lead("agent-9")[..], &[message("hello")]].concat());
        let nine = bad_lead.iter().position(|b| *b == b'9').unwrap();
        bad_lead[nine] = 0xff;
        let stream = [
            a.clone(),
            sdk(&[&lead("agent-1")[..], &[message("héllo, a longer text")]].concat()),
            bad.clone(),
            bad_lead.clone(),
            a.clone(),
            // Entries after the message (not part of a lead), a number in the lead.
            sdk(&[&lead("agent-1")[..], &[message("x"), entry("run_id", &sv("r"))]].concat()),
            sdk(&[entry("n", &number(1.5)), message("x")]),
            sdk(&[entry("n", &number(f64::NAN)), message("x")]),
            // A lead that is part of the seen one's first entry's bytes, and no message.
            sdk(&[entry("n", &sv(""))]),
            sdk(&[]),
            a,
        ];
        let mut seen = Seen::default();
        for (i, f) in stream.iter().enumerate() {
            let fresh = super::scan(f, &mut Seen::default());
            assert!(fresh.is_some(), "{i}");
            assert_eq!(super::scan(f, &mut seen), fresh, "frame {i}, seen {seen:?}");
        }
        assert_eq!(seen.0, lead("agent-1").concat(), "the stream's lead is kept");
        assert!(super::scan(&bad, &mut seen).unwrap().is_err());
        assert!(super::scan(&bad_lead, &mut seen).unwrap().is_err());
    }
}
