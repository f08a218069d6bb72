//! Logging: silent by default. A host installs a sink (the C API's log callback), or sets
//! `CURSOR_SDK_LOG=error|warn|info|debug` to get lines on stderr.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};

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

/// The installed sink and, per installation (generation), how many of its calls are running.
/// An emitter drops its clone of the sink before it stops counting, so once a replaced
/// generation's count is zero the setter holds the last reference.
struct State {
    sink: Option<(Level, Sink, u64)>,
    generation: u64,
    running: HashMap<u64, usize>,
}

static STATE: Lazy<(Mutex<State>, Condvar)> = Lazy::new(|| {
    let from_env = std::env::var("CURSOR_SDK_LOG").ok().as_deref().and_then(Level::parse);
    let sink = from_env.map(|lvl| {
        let s: Sink = Arc::new(|l: Level, m: &str| eprintln!("cursor_sdk[{}] {m}", l.name()));
        (lvl, s, 0)
    });
    let state = State {
        sink,
        generation: 0,
        running: HashMap::new(),
    };
    (Mutex::new(state), Condvar::new())
});

thread_local! {
    /// Generations whose sink this thread is running (a sink that logs or replaces itself).
    static IN_SINK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Installs (or with `None` removes) the sink; `level` is the most verbose level delivered.
/// Returns once no call of the previous sink is running and the previous sink has been
/// dropped here (so whatever it owns is released exactly once, before this returns). Called
/// from inside a sink call, it installs the new sink at once but cannot wait for its own call:
/// the previous sink is then dropped when the last call of it returns.
pub fn set_sink(level: Level, sink: Option<Sink>) {
    let (lock, idle) = &*STATE;
    let mut state = lock.lock();
    state.generation += 1;
    let generation = state.generation;
    let Some((_, old, old_gen)) = std::mem::replace(&mut state.sink, sink.map(|s| (level, s, generation))) else {
        return;
    };
    if IN_SINK.with(|g| g.borrow().contains(&old_gen)) {
        drop(state);
        drop(old);
        return;
    }
    while state.running.get(&old_gen).is_some_and(|&n| n > 0) {
        idle.wait(&mut state);
    }
    drop(state);
    drop(old);
}

/// Delivers a line to the sink, if one wants it.
pub fn emit(level: Level, message: &str) {
    let call = {
        let mut state = STATE.0.lock();
        let (sink, generation) = match &state.sink {
            Some((max, s, g)) if level <= *max => (s.clone(), *g),
            _ => return,
        };
        *state.running.entry(generation).or_default() += 1;
        IN_SINK.with(|g| g.borrow_mut().push(generation));
        Call {
            sink: Some(sink),
            generation,
        }
    };
    if let Some(sink) = &call.sink {
        sink(level, message);
    }
}

/// One running sink call; ends (even if the sink panics) by dropping its clone of the sink,
/// then no longer counting.
struct Call {
    sink: Option<Sink>,
    generation: u64,
}

impl Drop for Call {
    fn drop(&mut self) {
        drop(self.sink.take());
        IN_SINK.with(|g| g.borrow_mut().pop());
        let (lock, idle) = &*STATE;
        let mut state = lock.lock();
        if let Some(n) = state.running.get_mut(&self.generation) {
            *n -= 1;
            if *n == 0 {
                state.running.remove(&self.generation);
            }
        }
        drop(state);
        idle.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Counts its calls in progress and its drop.
    struct Probe {
        running: Arc<AtomicUsize>,
        dropped: Arc<AtomicUsize>,
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            assert_eq!(self.running.load(Ordering::SeqCst), 0, "dropped during a call");
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    // One test: the sink is process-wide.
    #[test]
    fn replacing_waits_for_calls_in_progress_and_drops_the_old_sink_once() {
        let (running, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let probe = Probe {
            running: running.clone(),
            dropped: dropped.clone(),
        };
        let sink: Sink = Arc::new(move |_l: Level, m: &str| {
            probe.running.fetch_add(1, Ordering::SeqCst);
            if m == "slow" {
                std::thread::sleep(Duration::from_millis(300));
            }
            probe.running.fetch_sub(1, Ordering::SeqCst);
        });
        set_sink(Level::Debug, Some(sink));
        let slow = std::thread::spawn(|| emit(Level::Info, "slow"));
        while running.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        set_sink(Level::Debug, None);
        assert_eq!(
            running.load(Ordering::SeqCst),
            0,
            "a call of the old sink outlived set_sink"
        );
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the old sink was not released by set_sink"
        );
        slow.join().unwrap();
        emit(Level::Error, "nobody listens");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);

        // A sink that replaces itself does not deadlock; it is released when its call returns.
        let dropped2 = Arc::new(AtomicUsize::new(0));
        let probe = Probe {
            running: Arc::new(AtomicUsize::new(0)),
            dropped: dropped2.clone(),
        };
        let d2 = dropped2.clone();
        let sink: Sink = Arc::new(move |_l: Level, _m: &str| {
            let _keep = &probe;
            set_sink(Level::Debug, None);
            assert_eq!(d2.load(Ordering::SeqCst), 0, "released during its own call");
            emit(Level::Error, "after removal: dropped");
        });
        set_sink(Level::Warn, Some(sink));
        emit(Level::Debug, "below the level: not delivered");
        assert_eq!(dropped2.load(Ordering::SeqCst), 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            emit(Level::Error, "replace yourself");
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("a sink replacing itself deadlocked");
        assert_eq!(dropped2.load(Ordering::SeqCst), 1);
    }
}
