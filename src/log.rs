//! Logging: silent by default. A host installs a sink (the C API's log callback), or sets
//! `CURSOR_SDK_LOG=error|warn|info|debug` to get lines on stderr.

use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::RwLock;

/// Severity, most severe first. Values are part of the C ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" | "1" | "true" => Some(Level::Debug),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

/// A log sink: receives every line at or above its level.
pub type Sink = Arc<dyn Fn(Level, &str) + Send + Sync>;

struct State {
    sink: Option<(Level, Sink)>,
}

static STATE: Lazy<RwLock<State>> = Lazy::new(|| {
    let from_env = std::env::var("CURSOR_SDK_LOG").ok().as_deref().and_then(Level::parse);
    let sink: Option<(Level, Sink)> = from_env.map(|lvl| {
        let s: Sink = Arc::new(|l: Level, m: &str| eprintln!("cursor_sdk[{}] {m}", l.name()));
        (lvl, s)
    });
    RwLock::new(State { sink })
});

/// Installs (or with `None` removes) the sink; `level` is the most verbose level delivered.
pub fn set_sink(level: Level, sink: Option<Sink>) {
    STATE.write().sink = sink.map(|s| (level, s));
}

/// Delivers a line to the sink, if one wants it.
pub fn emit(level: Level, message: &str) {
    let sink = {
        let state = STATE.read();
        match &state.sink {
            Some((max, s)) if level <= *max => s.clone(),
            _ => return,
        }
    };
    sink(level, message);
}
