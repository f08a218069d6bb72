//! Connect streaming envelopes: 1 flag byte + 4-byte big-endian length + payload.
//!
//! A corrupt or hostile length is rejected against a cap before anything is allocated.

use std::io::{self, Read};
use std::ops::Range;

use prost::bytes::Bytes;

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

/// The complete frames that one read made available: payload ranges into `data`, which they
/// share (no copy per frame). `end` is set when the clean end-of-stream frame came last.
#[derive(Debug, Default)]
pub struct FrameBatch {
    pub data: Bytes,
    pub frames: Vec<Range<usize>>,
    pub end: bool,
}

/// What the front of the buffer holds.
enum Parsed {
    /// A message frame: its payload range and the frame's full length.
    Message(Range<usize>, usize),
    /// A clean end-of-stream frame of this full length.
    End(usize),
    /// Not a whole frame yet: this many bytes are needed in all.
    Incomplete(usize),
}

/// Least read size: one read of a fast stream then carries hundreds of frames.
const READ_CHUNK: usize = 64 * 1024;
/// A read buffer's size: a read's worth, and room for the frames that arrive behind it.
const BUFFER: usize = 2 * READ_CHUNK;
/// A batch of at least this many bytes takes the buffer it lies in along (no copy); a smaller
/// one (a slow stream's frame or two) is copied out, and the buffer stays.
const HAND_OVER: usize = READ_CHUNK / 2;
/// Buffers a stream keeps for reuse once its consumer has dropped their batches.
const POOL_KEEP: usize = 2;

/// The read buffers of one stream that came back from its consumer: a fast stream then reads
/// into a few warm buffers in turn, instead of allocating and zeroing one per read.
#[derive(Default)]
struct Pool(parking_lot::Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// A zeroed buffer of the standard size (or `least` bytes, if more).
    fn take(&self, least: usize) -> Vec<u8> {
        match self.0.lock().pop() {
            Some(buf) if buf.len() >= least => buf,
            _ => vec![0; BUFFER.max(least)],
        }
    }
}

/// A buffer handed to a consumer with its batch; back to the pool when the batch is dropped.
struct Lent {
    buf: Vec<u8>,
    range: Range<usize>,
    pool: std::sync::Arc<Pool>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let mut free = self.pool.0.lock();
        if free.len() < POOL_KEEP && self.buf.len() == BUFFER {
            free.push(std::mem::take(&mut self.buf));
        }
    }
}

/// Reads frames from a byte stream through one buffer: each read takes whatever the socket
/// has, and every complete frame in it is handed out at once, so a fast stream costs one
/// `read` per many frames while a slow one still delivers each frame as soon as it is whole.
pub struct FrameReader<R> {
    inner: R,
    max_frame: usize,
    /// The bytes read and not handed out are `buf[start..filled]`; the room after them is
    /// zeroed once, when the buffer is made, and reused by every read.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    pool: std::sync::Arc<Pool>,
    /// How many frames the last batch had.
    last_count: usize,
    ended: bool,
    /// An error met after frames that were handed out first.
    failed: Option<Error>,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            max_frame,
            buf: Vec::new(),
            start: 0,
            filled: 0,
            pool: Default::default(),
            last_count: 0,
            ended: false,
            failed: None,
        }
    }

    /// The byte stream the frames come from.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The next frame. After the end frame this keeps returning `Frame::End`.
    /// An error end frame becomes the `Err` it carries.
    pub fn next_frame(&mut self) -> Result<Frame> {
        loop {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            if self.ended {
                return Ok(Frame::End);
            }
            match self.parse(self.start)? {
                Parsed::Message(range, len) => {
                    let payload = self.buf[range].to_vec();
                    self.start += len;
                    return Ok(Frame::Message(payload));
                }
                Parsed::End(len) => {
                    self.start += len;
                    self.ended = true;
                }
                Parsed::Incomplete(need) => self.fill(need)?,
            }
        }
    }

    /// Every complete frame available, reading (once, blocking) only when there is none.
    /// After the end frame this returns empty batches with `end` set. An error that follows
    /// some frames is returned by the next call, after those frames.
    pub fn next_batch(&mut self) -> Result<FrameBatch> {
        loop {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            if self.ended {
                return Ok(FrameBatch {
                    end: true,
                    ..FrameBatch::default()
                });
            }
            // Sized like the last batch: a fast stream's batches are alike.
            let mut frames = Vec::with_capacity(self.last_count);
            let (mut pos, mut end, mut need) = (self.start, false, 0);
            loop {
                match self.parse(pos) {
                    Ok(Parsed::Message(range, len)) => {
                        frames.push(range.start - self.start..range.end - self.start);
                        pos += len;
                    }
                    Ok(Parsed::End(len)) => {
                        pos += len;
                        end = true;
                        break;
                    }
                    Ok(Parsed::Incomplete(n)) => {
                        need = n;
                        break;
                    }
                    Err(e) if frames.is_empty() => return Err(e),
                    Err(e) => {
                        self.failed = Some(e);
                        break;
                    }
                }
            }
            if frames.is_empty() && !end {
                self.fill(need)?;
                continue;
            }
            self.ended = end;
            self.last_count = frames.len();
            let data = self.hand_out(pos);
            return Ok(FrameBatch { data, frames, end });
        }
    }

    /// The bytes from `start` to `end` as a batch's data: a large batch takes the buffer along
    /// (the reader goes on in a recycled one, with the incomplete frame after `end` copied
    /// over), a small one is copied out.
    fn hand_out(&mut self, end: usize) -> Bytes {
        let range = self.start..end;
        if range.len() < HAND_OVER {
            self.start = end;
            return Bytes::copy_from_slice(&self.buf[range]);
        }
        let rest = self.filled - end;
        let mut next = self.pool.take(rest);
        next[..rest].copy_from_slice(&self.buf[end..self.filled]);
        let buf = std::mem::replace(&mut self.buf, next);
        (self.start, self.filled) = (0, rest);
        Bytes::from_owner(Lent {
            buf,
            range,
            pool: self.pool.clone(),
        })
    }

    /// Looks at the frame starting at `pos` in the buffer; ranges are relative to the buffer.
    fn parse(&self, pos: usize) -> Result<Parsed> {
        let buf = &self.buf[pos..self.filled];
        if buf.len() < 5 {
            return Ok(Parsed::Incomplete(5));
        }
        let flags = buf[0];
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
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
        if buf.len() < 5 + len {
            return Ok(Parsed::Incomplete(5 + len));
        }
        if flags & FLAG_END != 0 {
            end_frame(&buf[5..5 + len])?;
            return Ok(Parsed::End(5 + len));
        }
        Ok(Parsed::Message(pos + 5..pos + 5 + len, 5 + len))
    }

    /// One read of whatever is available, making room for at least the `need` bytes the
    /// front frame requires (its length was checked against the cap already).
    fn fill(&mut self, need: usize) -> Result<()> {
        // The front frame moves to the buffer's start (it is incomplete: a few bytes, unless
        // it is a large frame, which is then read into room made for all of it).
        if self.start > 0 {
            self.buf.copy_within(self.start..self.filled, 0);
            (self.filled, self.start) = (self.filled - self.start, 0);
        }
        let have = self.filled;
        if self.buf.is_empty() {
            self.buf = self.pool.take(need);
        } else if self.buf.len() < need {
            // Only the new part is zeroed; with a read's worth more for the frames behind it.
            self.buf.resize(need + READ_CHUNK, 0);
        }
        let read = loop {
            match self.inner.read(&mut self.buf[have..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let n = match read {
            Ok(n) => n,
            Err(e) => return Err(io_error(e, "reading stream")),
        };
        self.filled = have + n;
        if n > 0 {
            return Ok(());
        }
        Err(Error::protocol(match have {
            0 => "stream closed without an end-of-stream frame".to_string(),
            1..=4 => format!("stream closed inside a frame header ({have} of 5 bytes)"),
            _ => format!("stream closed inside a frame ({} of {} bytes)", have - 5, need - 5),
        }))
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

    /// Yields at most `step` bytes per read, like a socket that has only part of the stream.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        reads: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn collect_batches(data: &[u8], step: usize) -> (Vec<Vec<Vec<u8>>>, usize) {
        let mut r = FrameReader::new(Trickle { data, step, reads: 0 }, 1 << 20);
        let mut batches = Vec::new();
        loop {
            let b = r.next_batch().unwrap();
            batches.push(b.frames.iter().map(|f| b.data[f.clone()].to_vec()).collect());
            if b.end {
                return (batches, r.inner.reads);
            }
        }
    }

    #[test]
    fn a_batch_is_every_complete_frame_of_one_read() {
        let big = vec![7u8; 100_000];
        let data = frames(&[(0, b"a"), (0, b""), (0, &big), (0, b"bc"), (FLAG_END, b"{}")]);
        let want: Vec<Vec<u8>> = vec![b"a".to_vec(), Vec::new(), big.clone(), b"bc".to_vec()];
        // Everything at once: one batch, each frame a slice of it.
        let (batches, _) = collect_batches(&data, usize::MAX);
        assert_eq!(batches.concat(), want);
        assert!(batches.len() <= 2, "{} batches", batches.len());
        // A byte at a time: each frame is handed out as soon as it is whole, never before.
        let (batches, reads) = collect_batches(&data, 1);
        assert_eq!(batches.concat(), want);
        assert!(batches.iter().all(|b| b.len() <= 1));
        assert!(reads >= data.len());
        // Odd steps that split headers and payloads.
        for step in [2, 3, 4, 6, 7, 4096] {
            assert_eq!(collect_batches(&data, step).0.concat(), want, "step {step}");
        }
    }

    /// Yields its chunks one per read: a slow stream, one frame per read.
    struct Chunks(std::collections::VecDeque<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(chunk) = self.0.pop_front() else { return Ok(0) };
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    #[test]
    fn a_slow_stream_reuses_its_zeroed_room_and_never_reads_stale_bytes() {
        // A long frame, then short ones: the room after each short frame still holds the
        // long frame's bytes, which must never be taken for a frame.
        let long = vec![b'x'; 300];
        let parts: Vec<(u8, &[u8])> = vec![(0, &long), (0, b"y"), (0, b""), (0, &long), (0, b"z")];
        let chunks = parts
            .iter()
            .map(|p| frames(&[*p]))
            .chain([frames(&[(FLAG_END, b"{}")])]);
        let mut r = FrameReader::new(Chunks(chunks.collect()), 1 << 20);
        let (mut got, mut buffers) = (Vec::new(), Vec::new());
        loop {
            let b = r.next_batch().unwrap();
            got.extend(b.frames.iter().map(|f| b.data[f.clone()].to_vec()));
            buffers.push((r.buf.as_ptr(), r.buf.len()));
            if b.end {
                break;
            }
        }
        assert_eq!(got, parts.iter().map(|p| p.1.to_vec()).collect::<Vec<_>>());
        // Small batches are copied out: the buffer zeroed for the first read serves every
        // later one (no new buffer, no zeroing per frame).
        assert!(buffers.windows(2).all(|w| w[0] == w[1]), "{buffers:?}");
        assert_eq!(buffers[0].1, BUFFER);
    }

    #[test]
    fn a_fast_stream_lends_its_buffers_and_reuses_them_when_dropped() {
        let payload = vec![b'p'; 1000];
        let parts: Vec<(u8, &[u8])> = (0..2000).map(|_| (0, payload.as_slice())).collect();
        let data = [frames(&parts), frames(&[(FLAG_END, b"{}")])].concat();
        let mut r = FrameReader::new(
            Trickle {
                data: &data,
                step: READ_CHUNK,
                reads: 0,
            },
            1 << 20,
        );
        let (mut frames_seen, mut lent, mut buffers) = (0, 0, std::collections::HashSet::new());
        loop {
            let b = r.next_batch().unwrap();
            assert!(b.frames.iter().all(|f| b.data[f.clone()] == payload[..]));
            frames_seen += b.frames.len();
            // A batch that took the reader's buffer along: the reader is in another one now.
            lent += usize::from(b.data.len() >= HAND_OVER);
            buffers.insert(r.buf.as_ptr());
            if b.end {
                break;
            }
        } // each batch is dropped here, its buffer back to the pool
        assert_eq!(frames_seen, parts.len());
        assert!(lent > 20, "{lent} batches lent their buffer");
        assert!(
            buffers.len() <= 1 + POOL_KEEP,
            "{} buffers for {lent} lent batches",
            buffers.len()
        );
    }

    #[test]
    fn an_error_after_frames_comes_after_them() {
        let mut data = frames(&[(0, b"ok")]);
        data.extend(frames(&[(
            FLAG_END,
            br#"{"error":{"code":"internal","message":"boom"}}"#,
        )]));
        let mut r = FrameReader::new(data.as_slice(), 1024);
        let b = r.next_batch().unwrap();
        assert_eq!(b.frames.len(), 1);
        assert!(!b.end);
        assert_eq!(r.next_batch().unwrap_err().message, "boom");
        // Truncated inside a frame, after a whole one.
        let mut data = frames(&[(0, b"ok"), (0, b"hello")]);
        data.truncate(data.len() - 2);
        let mut r = FrameReader::new(data.as_slice(), 1024);
        assert_eq!(r.next_batch().unwrap().frames.len(), 1);
        let e = r.next_batch().unwrap_err();
        assert!(e.message.contains("inside a frame (3 of 5 bytes)"), "{e}");
        // After the clean end: empty batches that say so.
        let data = frames(&[(FLAG_END, b"{}")]);
        let mut r = FrameReader::new(data.as_slice(), 1024);
        assert!(r.next_batch().unwrap().end);
        let again = r.next_batch().unwrap();
        assert!(again.end && again.frames.is_empty());
    }
}
