//! Draining the bridge's stderr for its whole life.
//!
//! If nobody reads the pipe, the bridge dies with EPIPE on its next write (bridge-behavior §0.2),
//! so one thread per bridge reads until EOF: it finds the ready line, keeps a bounded, token-free
//! tail for error messages, and forwards later lines to the user's log sink.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::ready::{parse_ready_line, redacted_ready_line, ReadyInfo};
use crate::error::{Error, ErrorKind, Result};

/// How much stderr we keep for error messages.
pub const TAIL_BYTES: usize = 16 * 1024;
/// Lines longer than this are cut (a crash dump can be huge; we only want its gist).
const MAX_LINE: usize = 8 * 1024;

/// A log sink for stderr lines: `Arc<dyn Fn(&str) + Send + Sync>`.
pub type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The last [`TAIL_BYTES`] of stderr, by whole lines where possible.
#[derive(Default)]
pub struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Ring {
    pub fn push(&mut self, line: &str) {
        let line = cut_front(line, TAIL_BYTES);
        self.bytes += line.len() + 1;
        self.lines.push_back(line.to_string());
        while self.bytes > TAIL_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len() + 1,
                None => break,
            }
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::with_capacity(self.bytes);
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    /// Replaces the token everywhere it already appears (lines read before it was known).
    fn scrub(&mut self, token: &str) {
        for l in self.lines.iter_mut() {
            if l.contains(token) {
                *l = l.replace(token, REDACTED);
            }
        }
        self.bytes = self.lines.iter().map(|l| l.len() + 1).sum();
    }
}

const REDACTED: &str = "<redacted>";

/// The last `max` bytes of `s`, on a char boundary.
fn cut_front(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// The end of a tail, at most `max` bytes, for putting into an error message.
pub fn tail_for_message(tail: &str, max: usize) -> String {
    let t = tail.trim_end();
    if t.is_empty() {
        return "(stderr empty)".to_string();
    }
    let cut = cut_front(t, max);
    if cut.len() < t.len() {
        format!("…{cut}")
    } else {
        cut.to_string()
    }
}

/// State shared by the drain thread and its owner.
pub struct StderrShared {
    pub ring: Mutex<Ring>,
    /// Set once known, so the token never reaches the ring or the sink.
    token: Mutex<Option<String>>,
    sink: Option<LineSink>,
}

impl StderrShared {
    pub fn new(sink: Option<LineSink>) -> Arc<StderrShared> {
        Arc::new(StderrShared {
            ring: Mutex::new(Ring::default()),
            token: Mutex::new(None),
            sink,
        })
    }

    pub fn tail(&self) -> String {
        self.ring.lock().text()
    }

    fn set_token(&self, token: &str) {
        if token.is_empty() {
            return;
        }
        *self.token.lock() = Some(token.to_string());
        self.ring.lock().scrub(token);
    }

    fn clean(&self, line: &str) -> String {
        match self.token.lock().as_deref() {
            Some(t) if line.contains(t) => line.replace(t, REDACTED),
            _ => line.to_string(),
        }
    }
}

/// What start-up learns from stderr.
pub enum Startup {
    /// The ready line and the token it leads to (or why it cannot be used).
    Ready(Result<(ReadyInfo, String)>),
    /// stderr closed before a ready line: the bridge is exiting.
    Eof,
}

/// Reads stderr until EOF. Runs on its own thread; returns when every holder of the pipe's write
/// end (the supervisor, the launcher, node) is gone.
pub fn drain(pipe: impl Read, shared: Arc<StderrShared>, startup: mpsc::Sender<Startup>, on_eof: impl FnOnce()) {
    let mut reader = BufReader::new(pipe);
    let mut startup = Some(startup);
    let mut buf = Vec::with_capacity(256);
    loop {
        buf.clear();
        // Bounded read: a line longer than MAX_LINE is handled in pieces.
        match (&mut reader).take(MAX_LINE as u64).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if let Some(tx) = startup.as_ref() {
            if let Some(parsed) = parse_ready_line(line) {
                // Never the raw line: old bridges inline the token in it.
                shared.ring.lock().push(&redacted_ready_line(line));
                let result = parsed.and_then(|info| {
                    let token = read_token(&info)?;
                    shared.set_token(&token);
                    Ok((info, token))
                });
                let _ = tx.send(Startup::Ready(result));
                startup = None;
                continue;
            }
            shared.ring.lock().push(line);
            continue;
        }
        let line = shared.clean(line);
        shared.ring.lock().push(&line);
        if let Some(sink) = &shared.sink {
            // A panicking sink must not stop the drain: the bridge would die of EPIPE.
            let _ = catch_unwind(AssertUnwindSafe(|| sink(&line)));
        }
    }
    if let Some(tx) = startup {
        let _ = tx.send(Startup::Eof);
    }
    on_eof();
}

/// The bearer token: the trimmed content of `authTokenFile` (or the inline token of old bridges).
/// The file is written before the ready line; the short retry only covers a slow filesystem.
pub(super) fn read_token(info: &ReadyInfo) -> Result<String> {
    if info.auth_token_file.as_os_str().is_empty() {
        return info
            .inline_token()
            .map(str::to_string)
            .ok_or_else(|| Error::new(ErrorKind::BridgeStartFailed, "bridge ready line has no token"));
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let result = std::fs::read_to_string(&info.auth_token_file);
        match &result {
            Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let why = match result {
                    Ok(_) => "it is empty".to_string(),
                    Err(e) => e.to_string(),
                };
                return Err(Error::new(
                    ErrorKind::BridgeStartFailed,
                    format!(
                        "cannot read the bridge's auth token file {}: {why}",
                        info.auth_token_file.display()
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_bounded_and_keeps_the_end() {
        let mut r = Ring::default();
        for i in 0..10_000 {
            r.push(&format!("line {i}"));
        }
        let t = r.text();
        assert!(t.len() <= TAIL_BYTES, "{}", t.len());
        assert!(t.ends_with("line 9999\n"));
        assert!(!t.contains("line 1\n"));
        let mut r = Ring::default();
        r.push(&"é".repeat(TAIL_BYTES));
        assert!(r.text().len() <= TAIL_BYTES + 1);
    }

    #[test]
    fn tail_for_message_cuts_from_the_front() {
        assert_eq!(tail_for_message("", 10), "(stderr empty)");
        assert_eq!(tail_for_message("abc\n", 10), "abc");
        assert_eq!(tail_for_message("0123456789abc", 3), "…abc");
    }

    #[test]
    fn drain_finds_ready_redacts_and_forwards() {
        let dir = std::env::temp_dir().join(format!("cursor-sdk-bridge-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = "TOKEN0123456789TOKEN0123456789TOKEN0123456";
        std::fs::write(dir.join("auth-token"), token).unwrap();
        let input = format!(
            "warming up\ncursor-sdk-bridge ready {{\"schemaVersion\":1,\"pid\":7,\"transport\":\"tcp\",\"protocol\":\"connect\",\"host\":\"127.0.0.1\",\"port\":9,\"authTokenFile\":\"{}\"}}\nrequest with {token}\nbye\n",
            dir.join("auth-token").display()
        );
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen2 = seen.clone();
        let shared = StderrShared::new(Some(Arc::new(move |l: &str| {
            seen2.lock().push(l.to_string());
            if l == "bye" {
                panic!("a bad sink");
            }
        })));
        let (tx, rx) = mpsc::channel();
        let mut eof = false;
        drain(input.as_bytes(), shared.clone(), tx, || eof = true);
        assert!(eof);
        match rx.recv().unwrap() {
            Startup::Ready(Ok((info, t))) => {
                assert_eq!(info.pid, 7);
                assert_eq!(t, token);
            }
            _ => panic!("no ready"),
        }
        assert!(rx.recv().is_err(), "no Eof after a ready line");
        assert_eq!(
            *seen.lock(),
            vec![format!("request with {REDACTED}"), "bye".to_string()]
        );
        let tail = shared.tail();
        assert!(tail.starts_with("warming up\ncursor-sdk-bridge ready {"));
        assert!(!tail.contains(token));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn drain_reports_eof_before_ready() {
        let shared = StderrShared::new(None);
        let (tx, rx) = mpsc::channel();
        drain(
            &b"cursor-sdk-bridge failed: Error: Unknown argument: --bogus\n"[..],
            shared.clone(),
            tx,
            || {},
        );
        assert!(matches!(rx.recv().unwrap(), Startup::Eof));
        assert!(shared.tail().contains("Unknown argument: --bogus"));
    }
}
