//! `cursor_error`: the full error object behind a failed call.

use std::ffi::{c_char, CString};

use super::{c_string, cursor_status, handle, quiet, take_handle};
use crate::error::Error;

/// A failed call's error: kind, codes, message and every detail the bridge sent. Created by
/// the library, owned by the caller, freed with `cursor_error_free`. Its accessors may be
/// called from any thread; their strings live until the error is freed.
pub struct cursor_error {
    pub(crate) error: Error,
    message: CString,
    connect_code: Option<CString>,
    request_id: Option<CString>,
    help_url: Option<CString>,
    provider: Option<CString>,
    run_id: Option<CString>,
}

impl cursor_error {
    pub(crate) fn new(error: Error) -> cursor_error {
        let opt = |s: Option<&str>| s.map(|s| c_string(s.to_string()));
        cursor_error {
            message: c_string(error.to_string()),
            connect_code: opt(error.connect_code.as_deref()),
            request_id: opt(error.request_id()),
            help_url: opt(error.help_url()),
            provider: opt(error.provider()),
            run_id: opt(error.run_id()),
            error,
        }
    }
}

pub(crate) fn into_raw(e: Error) -> *mut cursor_error {
    Box::into_raw(Box::new(cursor_error::new(e)))
}

fn ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
}

/// The error's kind as a (negative) status code, e.g. `CURSOR_E_NOT_FOUND`.
/// NULL gives `CURSOR_E_INVALID_ARGUMENT`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_kind(e: *const cursor_error) -> cursor_status {
    quiet(cursor_status::CURSOR_E_INTERNAL, || match handle(e, "error") {
        Ok(e) => cursor_status::from_kind(e.error.kind),
        Err(_) => cursor_status::CURSOR_E_INVALID_ARGUMENT,
    })
}

/// A readable message: `"<kind>: <text>"`, plus the request id when there is one. Never NULL
/// for a valid error (NULL for a NULL error). Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_message(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| e.message.as_ptr())
    })
}

/// The Connect code the bridge sent (`"not_found"`, `"internal"`…), or NULL when the error did
/// not come from the bridge. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_connect_code(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| ptr(&e.connect_code))
    })
}

/// The bridge's `SdkErrorCode` (0 when absent). Values the header does not know are kept as
/// they came. NULL gives 0.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_sdk_code(e: *const cursor_error) -> i32 {
    quiet(0, || handle(e, "error").map_or(0, |e| e.error.sdk_error_code))
}

/// The full request id from Cursor Cloud, or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_request_id(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| ptr(&e.request_id))
    })
}

/// How long to wait before retrying, in milliseconds, or -1 when the bridge did not say.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_retry_after_ms(e: *const cursor_error) -> i64 {
    quiet(-1, || {
        handle(e, "error")
            .ok()
            .and_then(|e| e.error.retry_after())
            .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
}

/// Rate-limit details. Returns true when the error carries them, and then writes each known
/// value through the non-NULL pointers (an unknown one is written as `UINT64_MAX`).
///
/// # Safety
/// Each out-pointer must be NULL or valid for a `uint64_t` write.
#[no_mangle]
pub unsafe extern "C" fn cursor_error_rate_limit(
    e: *const cursor_error,
    limit: *mut u64,
    remaining: *mut u64,
    reset_epoch_seconds: *mut u64,
) -> bool {
    quiet(false, || {
        let Some(rl) = handle(e, "error").ok().and_then(|e| e.error.rate_limit()) else {
            return false;
        };
        for (out, v) in [
            (limit, rl.limit),
            (remaining, rl.remaining),
            (reset_epoch_seconds, rl.reset_epoch_seconds),
        ] {
            if !out.is_null() {
                // SAFETY: the caller passes NULL or a valid pointer.
                unsafe { *out = v.unwrap_or(u64::MAX) };
            }
        }
        true
    })
}

/// A link to documentation or remediation, or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_help_url(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| ptr(&e.help_url))
    })
}

/// The upstream provider when the failure came from outside Cursor, or NULL. Borrowed until
/// `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_provider(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| ptr(&e.provider))
    })
}

/// The run the error is about (`CURSOR_E_STALE_RUN`: the run that holds the agent, to pass to
/// `cursor_client_cancel_run`), or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_run_id(e: *const cursor_error) -> *const c_char {
    quiet(std::ptr::null(), || {
        handle(e, "error").map_or(std::ptr::null(), |e| ptr(&e.run_id))
    })
}

/// The HTTP status of the response that carried the error (200 for errors inside a stream), or
/// 0 when there was no response.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_http_status(e: *const cursor_error) -> i32 {
    quiet(0, || {
        handle(e, "error").map_or(0, |e| e.error.http_status.map_or(0, i32::from))
    })
}

/// Whether retrying the same call may succeed (transport trouble, rate limits, a retry-after).
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
#[no_mangle]
pub unsafe extern "C" fn cursor_error_retryable(e: *const cursor_error) -> bool {
    quiet(false, || handle(e, "error").is_ok_and(|e| e.error.retryable))
}

/// Frees an error. NULL is accepted. The error's strings become invalid.
///
/// # Safety
/// `e` must be NULL or an error from this library not yet freed.
#[no_mangle]
pub unsafe extern "C" fn cursor_error_free(e: *mut cursor_error) {
    quiet((), || drop(take_handle(e)));
}
