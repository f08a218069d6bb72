//! `cursor_set_log_callback`: replacing or removing the callback waits for its calls in
//! progress and then frees its user data exactly once; a callback that replaces itself does
//! not deadlock. One test: the callback is process-wide.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cursor_sdk::ffi::log::*;
use cursor_sdk::log::{emit, Level};

#[derive(Default)]
struct Counters {
    calls: AtomicUsize,
    running: AtomicUsize,
    freed: AtomicUsize,
    freed_while_running: AtomicUsize,
}

unsafe extern "C" fn slow_log(user_data: *mut c_void, _level: cursor_log_level, message: *const c_char) {
    let c = &*(user_data as *const Counters);
    c.running.fetch_add(1, Ordering::SeqCst);
    c.calls.fetch_add(1, Ordering::SeqCst);
    if CStr::from_ptr(message).to_bytes() == b"slow" {
        std::thread::sleep(Duration::from_millis(500));
    }
    c.running.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn self_removing_log(user_data: *mut c_void, _level: cursor_log_level, _message: *const c_char) {
    let c = &*(user_data as *const Counters);
    c.running.fetch_add(1, Ordering::SeqCst);
    c.calls.fetch_add(1, Ordering::SeqCst);
    cursor_set_log_callback(cursor_log_level::CURSOR_LOG_DEBUG as i32, None, ptr::null_mut(), None);
    assert_eq!(c.freed.load(Ordering::SeqCst), 0, "freed during its own call");
    c.running.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn free_counters(user_data: *mut c_void) {
    let c = &*(user_data as *const Counters);
    if c.running.load(Ordering::SeqCst) > 0 {
        c.freed_while_running.fetch_add(1, Ordering::SeqCst);
    }
    c.freed.fetch_add(1, Ordering::SeqCst);
}

fn wait_until(cond: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(10), "condition not reached in 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn replacing_the_log_callback_waits_for_its_calls_and_frees_its_user_data_once() {
    use cursor_log_level::*;
    let first: &'static Counters = Box::leak(Box::default());
    let second: &'static Counters = Box::leak(Box::default());
    let data = |c: &'static Counters| c as *const Counters as *mut c_void;
    unsafe {
        cursor_set_log_callback(CURSOR_LOG_INFO as i32, Some(slow_log), data(first), Some(free_counters));
        emit(Level::Debug, "too verbose: not delivered");
        assert_eq!(first.calls.load(Ordering::SeqCst), 0);
        let slow = std::thread::spawn(|| emit(Level::Warn, "slow"));
        wait_until(|| first.running.load(Ordering::SeqCst) == 1);
        // Replacing returns only after the slow call, then frees the old user data once.
        let t0 = std::time::Instant::now();
        cursor_set_log_callback(
            CURSOR_LOG_DEBUG as i32,
            Some(slow_log),
            data(second),
            Some(free_counters),
        );
        assert_eq!(
            first.running.load(Ordering::SeqCst),
            0,
            "an old call outlived the setter"
        );
        assert_eq!(first.freed.load(Ordering::SeqCst), 1);
        assert_eq!(first.freed_while_running.load(Ordering::SeqCst), 0);
        assert!(t0.elapsed() < Duration::from_secs(5));
        slow.join().unwrap();
        emit(Level::Debug, "to the second");
        assert_eq!(first.calls.load(Ordering::SeqCst), 1);
        assert_eq!(second.calls.load(Ordering::SeqCst), 1);
        // Removing frees the second; NULL user_data_free is allowed.
        cursor_set_log_callback(CURSOR_LOG_DEBUG as i32, None, ptr::null_mut(), None);
        assert_eq!(second.freed.load(Ordering::SeqCst), 1);
        emit(Level::Error, "nobody listens");
        assert_eq!(second.calls.load(Ordering::SeqCst), 1);
        cursor_set_log_callback(CURSOR_LOG_DEBUG as i32, Some(slow_log), data(second), None);
        cursor_set_log_callback(CURSOR_LOG_DEBUG as i32, None, ptr::null_mut(), None);
        assert_eq!(second.freed.load(Ordering::SeqCst), 1);

        // A callback removing itself from inside a call: no deadlock, freed once as it returns.
        let third: &'static Counters = Box::leak(Box::default());
        cursor_set_log_callback(
            CURSOR_LOG_DEBUG as i32,
            Some(self_removing_log),
            data(third),
            Some(free_counters),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            emit(Level::Error, "remove yourself");
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("a log callback replacing itself deadlocked");
        assert_eq!(third.calls.load(Ordering::SeqCst), 1);
        assert_eq!(third.freed.load(Ordering::SeqCst), 1);
        assert_eq!(third.freed_while_running.load(Ordering::SeqCst), 0);
        emit(Level::Error, "removed");
        assert_eq!(third.calls.load(Ordering::SeqCst), 1);
    }
}
