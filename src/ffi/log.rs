//! `cursor_set_log_callback`: where the library's (otherwise silent) log lines go.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::tools::{cursor_free_fn, UserData};
use super::{c_string, quiet};
use crate::log::{self, Level};

/// Log severities (most severe first). Values are stable.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cursor_log_level {
    CURSOR_LOG_ERROR = 1,
    CURSOR_LOG_WARN = 2,
    CURSOR_LOG_INFO = 3,
    CURSOR_LOG_DEBUG = 4,
}

/// Log callback: `message` is a NUL-terminated line borrowed for the call. It may be called
/// from any library thread, concurrently; it must not throw or longjmp, and should be quick.
pub type cursor_log_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: cursor_log_level, message: *const c_char)>;

/// Installs the process-wide log callback for lines at `level` (a `cursor_log_level`) or more
/// severe; `fn` NULL removes it (then `user_data` and `user_data_free` are ignored). The
/// library prints nothing to stdout or stderr by default; without a callback,
/// `CURSOR_SDK_LOG=error|warn|info|debug` sends lines to stderr. Lines never contain the bridge
/// token. `user_data` is passed to every call. Thread-safe.
///
/// When the callback is replaced or removed, this waits for the calls of the previous one in
/// progress to return, then calls the previous `user_data_free` (may be NULL) exactly once: when
/// it returns, no call of the previous callback runs and its user data is released. Called from
/// inside the log callback it cannot wait for that call: it installs the new callback at once,
/// and the previous `user_data_free` runs on the thread of the last call in progress as it
/// returns. Do not hold a lock the callback takes while calling this.
///
/// # Safety
/// `fn` and `user_data_free` must be safe to call from any thread with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn cursor_set_log_callback(
    level: i32,
    r#fn: cursor_log_fn,
    user_data: *mut c_void,
    user_data_free: cursor_free_fn,
) {
    quiet((), || {
        let max = match level {
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            _ => Level::Debug,
        };
        let Some(callback) = r#fn else {
            log::set_sink(max, None);
            return;
        };
        let data = UserData::new(user_data, user_data_free);
        log::set_sink(
            max,
            Some(Arc::new(move |l: Level, m: &str| {
                let level = match l {
                    Level::Error => cursor_log_level::CURSOR_LOG_ERROR,
                    Level::Warn => cursor_log_level::CURSOR_LOG_WARN,
                    Level::Info => cursor_log_level::CURSOR_LOG_INFO,
                    Level::Debug => cursor_log_level::CURSOR_LOG_DEBUG,
                };
                let line = c_string(m.to_string());
                // SAFETY: the caller's callback, with the user data it gave us.
                unsafe { callback(data.ptr(), level, line.as_ptr()) };
            })),
        );
    })
}
