//! Connect streaming envelopes: 1 flag byte + 4-byte big-endian length + payload.
//!
//! A corrupt or hostile length is rejected against a cap before anything is allocated.

use std::io::{self, Read};

use crate::error::{Error, ErrorKind, Result};

/// Flag bit of the end-of-stream frame (its payload is JSON `{}` or `{"error":…}`).
pub const FLAG_END: u8 = 0x02;
/// Flag bit of a compressed payload (never negotiated by us).
pub const FLAG_COMPRESSED: u8 = 0x01;

/// Default cap on one frame's payload: 64 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;

/// Wraps one message into an uncompressed envelope.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(0);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// One decoded frame.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A message payload (possibly empty: a keepalive in proto).
    Message(Vec<u8>),
    /// The end-of-stream frame ended the stream cleanly.
    End,
}

/// Reads frames from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    max_frame: usize,
    ended: bool,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            max_frame,
            ended: false,
        }
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next frame. After the end frame this keeps returning `Frame::End`.
    /// An error end frame becomes the `Err` it carries.
    pub fn next_frame(&mut self) -> Result<Frame> {
        if self.ended {
            return Ok(Frame::End);
        }
        let mut head = [0u8; 5];
        match read_full(&mut self.inner, &mut head)? {
            0 => return Err(Error::protocol("stream closed without an end-of-stream frame")),
            5 => {}
            n => {
                return Err(Error::protocol(format!(
                    "stream closed inside a frame header ({n} of 5 bytes)"
                )))
            }
        }
        let flags = head[0];
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if len > self.max_frame {
            return Err(Error::protocol(format!(
                "frame of {len} bytes exceeds the {} byte cap",
                self.max_frame
            )));
        }
        if flags & FLAG_COMPRESSED != 0 {
            return Err(Error::protocol(
                "compressed frame received but no compression was negotiated",
            ));
        }
        let mut payload = vec![0u8; len];
        let got = read_full(&mut self.inner, &mut payload)?;
        if got != len {
            return Err(Error::protocol(format!(
                "stream closed inside a frame ({got} of {len} bytes)"
            )));
        }
        if flags & FLAG_END != 0 {
            self.ended = true;
            return end_frame(&payload).map(|_| Frame::End);
        }
        Ok(Frame::Message(payload))
    }
}

/// Parses the end-of-stream JSON: `{}` is success, `{"error":{…}}` the stream's error.
fn end_frame(payload: &[u8]) -> Result<()> {
    if payload.is_empty() {
        return Ok(());
    }
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| Error::protocol(format!("end-of-stream frame is not JSON: {e}")))?;
    match value.get("error") {
        Some(err) if !err.is_null() => Err(Error::from_connect_json(err, Some(200))),
        _ => Ok(()),
    }
}

/// Reads until `buf` is full or EOF; returns how many bytes were read. I/O errors map to
/// transport/timeout errors.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e, "reading stream")),
        }
    }
    Ok(filled)
}

/// Maps an I/O error to the library's error, keeping timeouts distinct.
pub fn io_error(e: io::Error, doing: &str) -> Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            Error::new(ErrorKind::Timeout, format!("timed out {doing}"))
        }
        _ => Error::new(ErrorKind::Transport, format!("{doing}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(parts: &[(u8, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (flags, p) in parts {
            out.push(*flags);
            out.extend_from_slice(&(p.len() as u32).to_be_bytes());
            out.extend_from_slice(p);
        }
        out
    }

    #[test]
    fn messages_keepalive_and_end() {
        let data = frames(&[(0, b"abc"), (0, b""), (FLAG_END, b"{}")]);
        let mut r = FrameReader::new(data.as_slice(), 1024);
        assert_eq!(r.next_frame().unwrap(), Frame::Message(b"abc".to_vec()));
        assert_eq!(r.next_frame().unwrap(), Frame::Message(Vec::new()));
        assert_eq!(r.next_frame().unwrap(), Frame::End);
        assert_eq!(r.next_frame().unwrap(), Frame::End);
    }

    #[test]
    fn error_end_frame_is_the_error() {
        let data = frames(&[(
            FLAG_END,
            br#"{"error":{"code":"unauthenticated","message":"Unauthorized"}}"#,
        )]);
        let e = FrameReader::new(data.as_slice(), 1024).next_frame().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth);
        assert_eq!(e.message, "Unauthorized");
        assert_eq!(e.http_status, Some(200));
    }

    #[test]
    fn missing_end_frame_and_truncation_are_protocol_errors() {
        let whole = frames(&[(0, b"hello")]);
        for cut in [0, 3, 7] {
            let mut r = FrameReader::new(&whole[..cut], 1024);
            let e = r.next_frame().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Protocol, "cut at {cut}: {e}");
        }
        let mut r = FrameReader::new(whole.as_slice(), 1024);
        r.next_frame().unwrap();
        let e = r.next_frame().unwrap_err();
        assert!(e.message.contains("without an end-of-stream frame"), "{e}");
    }

    #[test]
    fn hostile_length_is_rejected_without_allocating() {
        let data = [0u8, 0xff, 0xff, 0xff, 0xff];
        let e = FrameReader::new(&data[..], 64 << 20).next_frame().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Protocol);
        assert!(e.message.contains("exceeds"), "{e}");
    }

    #[test]
    fn compressed_and_garbage_end_frames_are_rejected() {
        let data = frames(&[(FLAG_COMPRESSED, b"x")]);
        assert_eq!(
            FrameReader::new(data.as_slice(), 16).next_frame().unwrap_err().kind,
            ErrorKind::Protocol
        );
        let data = frames(&[(FLAG_END, b"not json")]);
        assert_eq!(
            FrameReader::new(data.as_slice(), 16).next_frame().unwrap_err().kind,
            ErrorKind::Protocol
        );
    }

    #[test]
    fn encode_roundtrips() {
        let enc = encode(b"payload");
        assert_eq!(&enc[..5], &[0, 0, 0, 0, 7]);
        let mut with_end = enc.clone();
        with_end.extend(frames(&[(FLAG_END, b"{}")]));
        let mut r = FrameReader::new(with_end.as_slice(), 16);
        assert_eq!(r.next_frame().unwrap(), Frame::Message(b"payload".to_vec()));
    }
}
