//! The C ABI (`include/cursor_sdk.h`, generated from this module by cbindgen).
//!
//! Conventions, the same for every function:
//! - Fallible functions return a `cursor_status`: `CURSOR_OK` (0), `CURSOR_TIMEOUT` (1),
//!   `CURSOR_END` (2), or a negative error code. When the caller passes a non-NULL
//!   `cursor_error **err`, a failure also stores a full error object there (freed with
//!   `cursor_error_free`); on success `*err` is set to NULL. There is no thread-local last error.
//! - Out-parameters are set to NULL/0 first and written only on success.
//! - Input strings are NUL-terminated UTF-8, copied before the call returns; invalid UTF-8 or
//!   NULL where a value is required gives `CURSOR_E_INVALID_ARGUMENT`.
//! - Owned output strings (`char **`) are freed with `cursor_string_free`; `const char *`
//!   results are borrowed from the handle they came from and live until it is freed.
//! - A Rust panic never unwinds into C: it becomes `CURSOR_E_INTERNAL`.

// The C names are the API.
#![allow(non_camel_case_types)]

pub mod agent;
pub mod client;
pub mod error;
pub mod log;
pub mod run;
pub mod tools;

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use once_cell::sync::Lazy;

use crate::error::{Error, ErrorKind, Result};
pub use error::cursor_error;

/// Result of a fallible call. Values are stable and never reused. The error codes are the
/// negated Rust `ErrorKind` discriminants (one source: `error.rs`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cursor_status {
    /// Success.
    CURSOR_OK = 0,
    /// The caller's own timeout passed with nothing to report (every waiting function:
    /// `cursor_run_next_event`, `cursor_run_wait`). Not an error: `*err` stays NULL.
    CURSOR_TIMEOUT = 1,
    /// The stream is over: every event has been delivered.
    CURSOR_END = 2,
    /// A required argument was NULL or malformed (bad UTF-8, bad JSON, unknown or out-of-range
    /// option…).
    CURSOR_E_INVALID_ARGUMENT = -1,
    /// The bridge rejected the token, or the Cursor API key was missing or rejected.
    CURSOR_E_AUTH = -2,
    /// The account may not do this.
    CURSOR_E_PERMISSION_DENIED = -3,
    /// The agent, run or artifact does not exist (or not under the given cwd).
    CURSOR_E_NOT_FOUND = -4,
    /// The agent already has an active run (one this client streams).
    CURSOR_E_BUSY = -5,
    /// A rate or usage limit was hit; see `cursor_error_retry_after_ms`.
    CURSOR_E_RATE_LIMITED = -6,
    /// The bridge or the Cursor backend is unreachable.
    CURSOR_E_UNAVAILABLE = -7,
    /// No bridge was found, or it failed before it was ready.
    CURSOR_E_BRIDGE_START_FAILED = -8,
    /// The bridge process exited (the next client or agent call starts a new one).
    CURSOR_E_BRIDGE_EXITED = -9,
    /// The connection to the bridge failed.
    CURSOR_E_TRANSPORT = -10,
    /// The library's deadline for a call to the bridge passed (`requestTimeoutMs`, or
    /// `streamIdleTimeoutMs` for a silent stream): the bridge did not answer in time.
    CURSOR_E_DEADLINE = -11,
    /// The bridge broke the protocol (bad or oversized frame…).
    CURSOR_E_PROTOCOL = -12,
    /// The operation or run was cancelled.
    CURSOR_E_CANCELLED = -13,
    /// A bug in the library or the bridge (a caught panic included).
    CURSOR_E_INTERNAL = -14,
    /// Not supported here (e.g. artifacts of local agents, an option the running bridge
    /// release lacks).
    CURSOR_E_UNSUPPORTED = -15,
    /// The target's state forbids it (e.g. archived agent, live run).
    CURSOR_E_FAILED_PRECONDITION = -16,
    /// The API was used wrongly (wrong handle state, second completion, a handle used after
    /// its client was freed, any call in a forked child…).
    CURSOR_E_USAGE = -17,
    /// `cursor_prompt` only: the run ended with status error or expired. The error's message is
    /// the run's reason and its connect code the run's error code.
    CURSOR_E_RUN_FAILED = -18,
    /// The agent is held by a run no bridge of this client runs (made by another bridge
    /// process, or left running by one that died). The message names the run; cancel it with
    /// `cursor_client_cancel_run`, or send with `"reclaimStaleRuns": true`.
    CURSOR_E_STALE_RUN = -19,
}

impl cursor_status {
    pub(crate) fn from_kind(kind: ErrorKind) -> cursor_status {
        use cursor_status::*;
        match kind {
            ErrorKind::InvalidArgument => CURSOR_E_INVALID_ARGUMENT,
            ErrorKind::Auth => CURSOR_E_AUTH,
            ErrorKind::PermissionDenied => CURSOR_E_PERMISSION_DENIED,
            ErrorKind::NotFound => CURSOR_E_NOT_FOUND,
            ErrorKind::Busy => CURSOR_E_BUSY,
            ErrorKind::RateLimited => CURSOR_E_RATE_LIMITED,
            ErrorKind::Unavailable => CURSOR_E_UNAVAILABLE,
            ErrorKind::BridgeStartFailed => CURSOR_E_BRIDGE_START_FAILED,
            ErrorKind::BridgeExited => CURSOR_E_BRIDGE_EXITED,
            ErrorKind::Transport => CURSOR_E_TRANSPORT,
            ErrorKind::Timeout => CURSOR_E_DEADLINE,
            ErrorKind::Protocol => CURSOR_E_PROTOCOL,
            ErrorKind::Cancelled => CURSOR_E_CANCELLED,
            ErrorKind::Internal => CURSOR_E_INTERNAL,
            ErrorKind::Unsupported => CURSOR_E_UNSUPPORTED,
            ErrorKind::FailedPrecondition => CURSOR_E_FAILED_PRECONDITION,
            ErrorKind::Usage => CURSOR_E_USAGE,
            ErrorKind::RunFailed => CURSOR_E_RUN_FAILED,
            ErrorKind::StaleRun => CURSOR_E_STALE_RUN,
        }
    }
}

/// A short, static, lower-case name for a status (`"ok"`, `"not_found"`…; an error status's
/// name is its kind's). Never NULL; unknown values give `"unknown"`. The string is static: do
/// not free it. Thread-safe.
#[no_mangle]
pub extern "C" fn cursor_status_name(status: i32) -> *const c_char {
    static NAMES: Lazy<Vec<(i32, CString)>> = Lazy::new(|| {
        let mut names = vec![
            (cursor_status::CURSOR_OK as i32, c"ok".to_owned()),
            (cursor_status::CURSOR_TIMEOUT as i32, c"timeout".to_owned()),
            (cursor_status::CURSOR_END as i32, c"end".to_owned()),
        ];
        for kind in ErrorKind::ALL {
            names.push((cursor_status::from_kind(kind) as i32, c_string(kind.name().to_string())));
        }
        names
    });
    quiet(c"unknown".as_ptr(), || {
        NAMES
            .iter()
            .find(|(v, _)| *v == status)
            .map_or(c"unknown".as_ptr(), |(_, n)| n.as_ptr())
    })
}

/// The library version as a number: `MAJOR * 10000 + MINOR * 100 + PATCH`, equal to
/// `CURSOR_SDK_VERSION_NUMBER` of the header it was built with. Compare the two at run time to
/// detect a header/library mismatch. Thread-safe.
#[no_mangle]
pub extern "C" fn cursor_sdk_version_number() -> u32 {
    fn part(i: usize) -> u32 {
        env!("CARGO_PKG_VERSION")
            .split('.')
            .nth(i)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }
    part(0) * 10000 + part(1) * 100 + part(2)
}

/// The library version, `"MAJOR.MINOR.PATCH"`, equal to `CURSOR_SDK_VERSION`. Static; do not
/// free. Thread-safe.
#[no_mangle]
pub extern "C" fn cursor_sdk_version() -> *const c_char {
    static VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"0.0.0",
    };
    VERSION.as_ptr()
}

/// Frees a string the library returned through a `char **` out-parameter. NULL is accepted.
/// Never pass strings that came from elsewhere (or `const char *` results).
///
/// # Safety
/// `s` must be NULL or a string returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

/// Runs `f` behind the panic boundary: clears `*err`, turns an `Err` or a panic into a status
/// and (when `err` is non-NULL) an error object.
pub(crate) fn call(err: *mut *mut cursor_error, f: impl FnOnce() -> Result<cursor_status>) -> cursor_status {
    if !err.is_null() {
        // SAFETY: the caller passes NULL or a valid `cursor_error **`.
        unsafe { *err = std::ptr::null_mut() };
    }
    let outcome = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => Err(Error::internal(format!(
            "panic inside cursor_sdk: {}",
            panic_message(&panic)
        ))),
    };
    match outcome {
        Ok(status) => status,
        Err(e) => {
            let status = cursor_status::from_kind(e.kind);
            if !err.is_null() {
                // SAFETY: as above.
                unsafe { *err = error::into_raw(e) };
            }
            status
        }
    }
}

/// Runs `f` behind the panic boundary where no error can be reported; a panic gives `fallback`.
pub(crate) fn quiet<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

pub(crate) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A required input string.
pub(crate) fn arg_str<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("{name} is NULL")));
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::invalid_argument(format!("{name} is not valid UTF-8")))
}

/// An optional input string (NULL means absent).
pub(crate) fn opt_str<'a>(p: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        arg_str(p, name).map(Some)
    }
}

/// A JSON text argument, parsed (bad JSON is an error that names the argument).
pub(crate) fn json_arg(p: *const c_char, name: &str) -> Result<serde_json::Value> {
    serde_json::from_str(arg_str(p, name)?).map_err(|e| Error::invalid_argument(format!("{name}: malformed JSON: {e}")))
}

/// An optional JSON text argument (NULL means absent).
pub(crate) fn opt_json(p: *const c_char, name: &str) -> Result<Option<serde_json::Value>> {
    if p.is_null() {
        Ok(None)
    } else {
        json_arg(p, name).map(Some)
    }
}

/// Checks an out-pointer and clears what it points to.
pub(crate) fn out_ptr<T>(out: *mut *mut T, name: &str) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid_argument(format!("{name} is NULL")));
    }
    // SAFETY: non-NULL out-pointer from the caller.
    unsafe { *out = std::ptr::null_mut() };
    Ok(())
}

/// Clears an optional out-pointer (NULL allowed).
pub(crate) fn clear_out<T>(out: *mut *mut T) {
    if !out.is_null() {
        // SAFETY: non-NULL out-pointer from the caller.
        unsafe { *out = std::ptr::null_mut() };
    }
}

/// Hands an owned string to C (`cursor_string_free` frees it). Interior NULs are escaped away
/// by construction: JSON and our messages never contain them, but replace them to be safe.
pub(crate) fn owned_string(s: String) -> *mut c_char {
    c_string(s).into_raw()
}

/// A C copy of `s` in one allocation (interior NULs dropped, as [`c_string`] does).
pub(crate) fn c_string_of(s: &str) -> CString {
    CString::new(s.as_bytes()).unwrap_or_else(|_| c_string(s.to_string()))
}

pub(crate) fn c_string(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|b| *b != 0);
        CString::new(bytes).unwrap_or_default()
    })
}

/// Writes an owned string to a `char **` out-parameter.
pub(crate) fn write_string(out: *mut *mut c_char, s: String) {
    // SAFETY: checked non-NULL by `out_ptr` before.
    unsafe { *out = owned_string(s) };
}

/// Serialises a value to JSON text for C.
pub(crate) fn json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::internal(format!("JSON encoding failed: {e}")))
}

/// Borrows a handle immutably, or fails with invalid-argument on NULL.
pub(crate) fn handle<'a, T>(p: *const T, name: &str) -> Result<&'a T> {
    // SAFETY: a non-NULL handle pointer comes from this library (documented contract).
    unsafe { p.as_ref() }.ok_or_else(|| Error::invalid_argument(format!("{name} is NULL")))
}

/// Moves a value into a heap handle for C.
pub(crate) fn into_handle<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Takes a heap handle back (NULL gives None).
///
/// # Safety
/// `p` must be NULL or a pointer from `into_handle::<T>` not yet taken back.
pub(crate) unsafe fn take_handle<T>(p: *mut T) -> Option<Box<T>> {
    (!p.is_null()).then(|| Box::from_raw(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C statuses are the negated Rust kinds, each with a distinct name: the C enum and
    /// `ErrorKind` cannot drift apart unnoticed.
    #[test]
    fn c_statuses_are_the_negated_error_kinds() {
        let mut names = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            let status = cursor_status::from_kind(kind);
            assert_eq!(status as i32, -(kind as i32), "{kind:?}");
            // SAFETY: cursor_status_name returns a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(cursor_status_name(status as i32)) };
            assert_eq!(name.to_str().unwrap(), kind.name());
            assert!(names.insert(kind.name()), "duplicate name {}", kind.name());
        }
        assert_eq!(ErrorKind::ALL.len(), names.len());
        assert_eq!(
            ErrorKind::ALL.last().map(|k| *k as i32),
            Some(ErrorKind::ALL.len() as i32)
        );
    }

    #[test]
    fn the_version_number_matches_the_version_string() {
        let v = env!("CARGO_PKG_VERSION");
        let parts: Vec<u32> = v.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(
            cursor_sdk_version_number(),
            parts[0] * 10000 + parts[1] * 100 + parts[2]
        );
    }
}
