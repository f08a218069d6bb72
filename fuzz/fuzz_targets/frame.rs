//! The Connect frame reader over arbitrary bytes, fed in arbitrary read sizes.
//!
//! Input: `[cap][steps][stream…]`. `cap` picks the frame size cap, `steps` seeds the sizes of
//! the reads the stream is handed out in (0 = everything at once). `next_frame` and
//! `next_batch` (in two different read patterns) must both give what a whole-buffer model of the
//! envelope format gives: the same payloads, then the same end or the same kind of error.
#![no_main]

use std::io::{self, Read};

use cursor_sdk::transport::frame::{Frame, FrameReader, FLAG_COMPRESSED, FLAG_END};
use cursor_sdk::{Error, ErrorKind};
use libfuzzer_sys::fuzz_target;

/// How a stream ends, as the model sees it.
#[derive(Debug, PartialEq)]
enum Outcome {
    End,
    /// The end frame's `{"error":…}`.
    EndError(Error),
    /// Any other failure, by kind.
    Failed(ErrorKind),
}

/// The envelope format read from the whole buffer at once: 1 flag byte, a 4-byte big-endian
/// length, the payload.
fn model(mut data: &[u8], cap: usize) -> (Vec<Vec<u8>>, Outcome) {
    let mut frames = Vec::new();
    loop {
        if data.len() < 5 {
            return (frames, Outcome::Failed(ErrorKind::Protocol));
        }
        let flags = data[0];
        let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
        if len > cap || flags & FLAG_COMPRESSED != 0 || data.len() - 5 < len {
            return (frames, Outcome::Failed(ErrorKind::Protocol));
        }
        let payload = &data[5..5 + len];
        data = &data[5 + len..];
        if flags & FLAG_END == 0 {
            frames.push(payload.to_vec());
            continue;
        }
        if payload.is_empty() {
            return (frames, Outcome::End);
        }
        let outcome = match serde_json::from_slice::<serde_json::Value>(payload) {
            Err(_) => Outcome::Failed(ErrorKind::Protocol),
            Ok(v) => match v.get("error") {
                Some(e) if !e.is_null() => Outcome::EndError(Error::from_connect_json(e, Some(200))),
                _ => Outcome::End,
            },
        };
        return (frames, outcome);
    }
}

/// Hands out the stream in reads of pseudo-random sizes (1 to 512 bytes), now and then
/// interrupted (`EINTR`, which the reader must retry).
struct Chopped<'a> {
    data: &'a [u8],
    state: u32,
}

impl Read for Chopped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = buf.len();
        if self.state != 0 {
            // xorshift32
            self.state ^= self.state << 13;
            self.state ^= self.state >> 17;
            self.state ^= self.state << 5;
            if self.state.is_multiple_of(11) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            n = n.min(1 + (self.state % 512) as usize);
        }
        n = n.min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn outcome(e: Error) -> Outcome {
    match e.http_status {
        Some(200) => Outcome::EndError(e),
        _ => Outcome::Failed(e.kind),
    }
}

fn by_frames(data: &[u8], cap: usize, seed: u32) -> (Vec<Vec<u8>>, Outcome) {
    let mut r = FrameReader::new(Chopped { data, state: seed }, cap);
    let mut frames = Vec::new();
    loop {
        match r.next_frame() {
            Ok(Frame::Message(p)) => frames.push(p),
            Ok(Frame::End) => {
                assert_eq!(r.next_frame().unwrap(), Frame::End, "the end is sticky");
                return (frames, Outcome::End);
            }
            Err(e) => return (frames, outcome(e)),
        }
    }
}

fn by_batches(data: &[u8], cap: usize, seed: u32) -> (Vec<Vec<u8>>, Outcome) {
    let mut r = FrameReader::new(Chopped { data, state: seed }, cap);
    let mut frames = Vec::new();
    loop {
        match r.next_batch() {
            Ok(b) => {
                assert!(
                    b.end || !b.frames.is_empty(),
                    "a batch that is neither frames nor the end"
                );
                frames.extend(b.frames.iter().map(|f| b.data[f.clone()].to_vec()));
                if b.end {
                    let again = r.next_batch().unwrap();
                    assert!(again.end && again.frames.is_empty(), "the end is sticky");
                    return (frames, Outcome::End);
                }
            }
            Err(e) => return (frames, outcome(e)),
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let [cap, steps, data @ ..] = input else { return };
    let cap = match cap % 4 {
        // Not the 64 MiB default: a hostile length makes the reader allocate (and zero) up to
        // the cap, which would only slow the fuzzer down.
        0 => 1 << 20,
        1 => 0,
        2 => 16,
        _ => 1024,
    };
    let seed = u32::from(*steps) * 0x0101_0101;
    let want = model(data, cap);
    assert_eq!(by_frames(data, cap, seed), want, "next_frame");
    assert_eq!(by_batches(data, cap, seed), want, "next_batch");
    assert_eq!(
        by_batches(data, cap, seed.rotate_left(7) | 1),
        want,
        "next_batch, other reads"
    );
});
