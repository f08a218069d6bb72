/*
 * cursor_sdk: the Cursor agent SDK as a C library.
 *
 * Generated from src/ffi by cbindgen: do not edit.
 *
 * Conventions for every function:
 * - Fallible functions return a cursor_status: CURSOR_OK (0), CURSOR_TIMEOUT (1), CURSOR_END (2),
 *   or a negative CURSOR_E_* code. With a non-NULL `cursor_error **err`, a failure also stores a
 *   full error object there (free it with cursor_error_free); on success *err is set to NULL.
 *   There is no thread-local "last error".
 * - Out-parameters are set to NULL/0 first and written only on success.
 * - Input strings are NUL-terminated UTF-8, copied before the call returns (never kept).
 *   Invalid UTF-8, or NULL where a value is required, gives CURSOR_E_INVALID_ARGUMENT.
 * - `char **` results are owned: free them with cursor_string_free. `const char *` results are
 *   borrowed from the handle they came from and live until that handle is freed.
 * - Every *_free function accepts NULL.
 * - A Rust panic never unwinds into C: it becomes CURSOR_E_INTERNAL.
 * - Threads: a cursor_client may be used from many threads at once. A cursor_run is consumed by
 *   one thread at a time (it may move between threads); cursor_run_cancel, cursor_run_status and
 *   cursor_run_id are safe from any thread. The library prints nothing unless asked
 *   (cursor_set_log_callback, or CURSOR_SDK_LOG).
 */

#ifndef CURSOR_SDK_H
#define CURSOR_SDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version this header belongs to; cursor_sdk_version() gives the library's. */
#define CURSOR_SDK_VERSION "0.1.0"
#define CURSOR_SDK_VERSION_MAJOR 0
#define CURSOR_SDK_VERSION_MINOR 1
#define CURSOR_SDK_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH; cursor_sdk_version_number() gives the library's. */
#define CURSOR_SDK_VERSION_NUMBER 100
/* The ABI major: the shared library is libcursor_sdk.so.CURSOR_SDK_ABI_VERSION. */
#define CURSOR_SDK_ABI_VERSION 0

/*
 * Annotations for importers (Swift, IDEs, clang's checks); empty except under clang.
 * - CURSOR_OPEN_ENUM: the enums may gain values (Swift imports them as non-frozen enums).
 * - CURSOR_NULLABLE / CURSOR_NONNULL: a pointer may / may not be NULL. Between
 *   CURSOR_ASSUME_NONNULL_BEGIN and CURSOR_ASSUME_NONNULL_END, which wrap every declaration
 *   below, a pointer without either is non-NULL.
 */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(enum_extensibility)
#define CURSOR_OPEN_ENUM __attribute__((enum_extensibility(open)))
#endif
#endif
#ifndef CURSOR_OPEN_ENUM
#define CURSOR_OPEN_ENUM
#endif
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(nullability)
#define CURSOR_NULLABLE _Nullable
#define CURSOR_NONNULL _Nonnull
#define CURSOR_ASSUME_NONNULL_BEGIN \
    _Pragma("clang diagnostic push") \
    _Pragma("clang diagnostic ignored \"-Wnullability-extension\"") \
    _Pragma("clang assume_nonnull begin")
#define CURSOR_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end") _Pragma("clang diagnostic pop")
#endif
#endif
#ifndef CURSOR_NULLABLE
#define CURSOR_NULLABLE
#define CURSOR_NONNULL
#define CURSOR_ASSUME_NONNULL_BEGIN
#define CURSOR_ASSUME_NONNULL_END
#endif

CURSOR_ASSUME_NONNULL_BEGIN


/// Result of a fallible call. Values are stable and never reused. The error codes are the
/// negated Rust `ErrorKind` discriminants (one source: `error.rs`).
typedef enum CURSOR_OPEN_ENUM {
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
} cursor_status;

/// Log severities (most severe first). Values are stable.
typedef enum CURSOR_OPEN_ENUM {
    CURSOR_LOG_ERROR = 1,
    CURSOR_LOG_WARN = 2,
    CURSOR_LOG_INFO = 3,
    CURSOR_LOG_DEBUG = 4,
} cursor_log_level;

/// A run's status. Values are stable. (Named `_t` because of the accessor `cursor_run_status()`.)
typedef enum CURSOR_OPEN_ENUM {
    /// Not a run: what `cursor_run_status(NULL)` gives.
    CURSOR_RUN_INVALID = 0,
    CURSOR_RUN_RUNNING = 1,
    CURSOR_RUN_FINISHED = 2,
    CURSOR_RUN_ERROR = 3,
    CURSOR_RUN_CANCELLED = 4,
    CURSOR_RUN_EXPIRED = 5,
} cursor_run_status_t;

/// What an event carries. Values are stable. (Named `_t` because C cannot have a type and the
/// accessor `cursor_event_kind()` share a name.)
typedef enum CURSOR_OPEN_ENUM {
    /// Not an event: what `cursor_event_kind(NULL)` gives.
    CURSOR_EVENT_INVALID = 0,
    /// An `sdk_message`: `cursor_event_type` is "assistant", "status", "tool_call", "thinking",
    /// "usage", "system", "task", "request", … (unknown types pass through).
    CURSOR_EVENT_MESSAGE = 1,
    /// An interaction update (with `enableDeltas`): "text-delta", "thinking-delta", …
    CURSOR_EVENT_DELTA = 2,
    /// A conversation step (with `enableSteps`).
    CURSOR_EVENT_STEP = 3,
    /// The run's result; `cursor_event_type` is "result".
    CURSOR_EVENT_RESULT = 4,
} cursor_event_kind_t;

/// An agent handle. Its functions may be called from several threads; sends to one agent are
/// refused with `CURSOR_E_BUSY` while a run of it is active (a bridge rule). The handle keeps
/// the client's connection alive; free it before the client.
typedef struct cursor_agent cursor_agent;

/// A client: owns (or attaches to) one bridge. Thread-safe: every function taking a
/// `cursor_client *` may be called from many threads at once.
typedef struct cursor_client cursor_client;

/// A failed call's error: kind, codes, message and every detail the bridge sent. Created by
/// the library, owned by the caller, freed with `cursor_error_free`. Its accessors may be
/// called from any thread; their strings live until the error is freed.
typedef struct cursor_error cursor_error;

/// One event of a run. Owned by the caller (`cursor_event_free`); its strings are borrowed
/// until then. Safe to read from any thread. An event shares the buffer of the read it came in
/// with the other events of that read (a fast stream's reads are 128 KiB) until it is freed:
/// free events rather than keep them, and copy what you keep.
typedef struct cursor_event cursor_event;

/// A run handle. Consume it from one thread at a time (it may move between threads);
/// `cursor_run_cancel`, `cursor_run_status` and `cursor_run_id` are safe from any thread.
typedef struct cursor_run cursor_run;

/// The reply slot of one store call, valid only during the `cursor_store_fn` call.
typedef struct cursor_store_reply cursor_store_reply;

/// One tool call, handed to a `cursor_tool_fn`. Its accessors' strings live until
/// `cursor_tool_call_free`. Completion functions may be called from any thread.
typedef struct cursor_tool_call cursor_tool_call;

/// Log callback: `message` is a NUL-terminated line borrowed for the call. It may be called
/// from any library thread, concurrently; it must not throw or longjmp, and should be quick.
typedef void (*cursor_log_fn)(void *CURSOR_NULLABLE user_data, cursor_log_level level, const char *message);

/// Releases a `user_data` pointer; called exactly once.
typedef void (*cursor_free_fn)(void *CURSOR_NULLABLE user_data);

/// Push-mode callback. Called on a library thread, in stream order, once per event with
/// `event` non-NULL and `error` NULL; then exactly once more with `event` NULL as the final
/// call: `error` NULL when the stream ended normally, else the failure. `event` and `error` are
/// borrowed for the duration of the call only (copy what you keep). The callback must not throw
/// or longjmp, and must not call `cursor_run_next_event` or `cursor_run_wait` on this run; it may
/// call `cursor_run_cancel` (which never blocks), and `cursor_run_free` (which then returns at
/// once; the final call follows the callback's return).
typedef void (*cursor_event_fn)(void *CURSOR_NULLABLE user_data,
                                const cursor_event *CURSOR_NULLABLE event,
                                const cursor_error *CURSOR_NULLABLE error);

/// Tool callback. Called on a library thread, possibly concurrently for different calls.
/// `call` is owned by you: answer it with `cursor_tool_call_complete` or `cursor_tool_call_fail`
/// (now, or later from any thread), and free it with `cursor_tool_call_free`. Must not throw or
/// longjmp.
typedef void (*cursor_tool_fn)(void *CURSOR_NULLABLE user_data, cursor_tool_call *call);

/// Store callback: answer through `reply` (`cursor_store_reply_ok` or `cursor_store_reply_error`)
/// before returning. `substore` is "agents", "runs", "runEvents" or "checkpoints"; `method` is
/// "get", "create", "update", "delete", "list" or "append"; `input_json` the operation's input.
/// All pointers are borrowed for the call. Called on library threads, possibly concurrently.
typedef void (*cursor_store_fn)(void *CURSOR_NULLABLE user_data,
                                const char *substore,
                                const char *method,
                                const char *input_json,
                                cursor_store_reply *reply);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/// A short, static, lower-case name for a status (`"ok"`, `"not_found"`…; an error status's
/// name is its kind's). Never NULL; unknown values give `"unknown"`. The string is static: do
/// not free it. Thread-safe.
const char *cursor_status_name(int32_t status);

/// The library version as a number: `MAJOR * 10000 + MINOR * 100 + PATCH`, equal to
/// `CURSOR_SDK_VERSION_NUMBER` of the header it was built with. Compare the two at run time to
/// detect a header/library mismatch. Thread-safe.
uint32_t cursor_sdk_version_number(void);

/// The library version, `"MAJOR.MINOR.PATCH"`, equal to `CURSOR_SDK_VERSION`. Static; do not
/// free. Thread-safe.
const char *cursor_sdk_version(void);

/// Frees a string the library returned through a `char **` out-parameter. NULL is accepted.
/// Never pass strings that came from elsewhere (or `const char *` results).
///
/// # Safety
/// `s` must be NULL or a string returned by this library and not yet freed.
void cursor_string_free(char *CURSOR_NULLABLE s);

/// Creates an agent. `agent_options_json` (may be NULL) is `AgentOptions` in the proto3 JSON
/// mapping plus shorthands: e.g. `{"model":"composer-2","cwd":".","name":"helper"}`; keys
/// camelCase or snake_case; unknown keys are `CURSOR_E_INVALID_ARGUMENT` naming the key path.
/// An `idempotencyKey` member makes a cloud create safe to retry (cloud creates without one
/// get a fresh key; the bridge refuses keys for local agents).
/// Local agents (no `cloud` key) default their cwd to the client's workspace; the client's API
/// key is filled in. On success `*out` owns the agent (`cursor_agent_free`). Blocks for one RPC
/// (and for the bridge's start on first use).
///
/// # Safety
/// `agent_options_json` must be NULL or NUL-terminated; `out` valid; `err` NULL or valid.
cursor_status cursor_agent_create(cursor_client *c,
                                  const char *CURSOR_NULLABLE agent_options_json,
                                  cursor_agent *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                  cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Re-attaches to an existing agent by id and applies `agent_options_json` (as for create: give
/// the model and, for agents made elsewhere, the cwd). `"reclaimStaleRuns": true` makes every
/// send of this handle take the agent over from a stale run (see `cursor_agent_send`). On
/// success `*out` owns the agent. Blocks for one RPC (bounded by `requestTimeoutMs`), plus the
/// bridge's start on first use (`startupTimeoutMs`).
///
/// # Safety
/// `agent_id` must be NUL-terminated; `agent_options_json` NULL or NUL-terminated; `out` valid.
cursor_status cursor_agent_resume(cursor_client *c,
                                  const char *agent_id,
                                  const char *CURSOR_NULLABLE agent_options_json,
                                  cursor_agent *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                  cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The agent's id. Borrowed: valid until `cursor_agent_free`. NULL for a NULL agent.
///
/// # Safety
/// `a`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_agent_id(const cursor_agent *a);

/// Sends a message and returns the live run once its stream is open: errors such as an unknown
/// agent, a missing model or a busy agent are returned here. `message` is plain text, or a JSON
/// `UserMessage` object (`{"text":"…","images":[{"data":{"data":"<base64>","mimeType":"image/png"}}]}`).
/// `send_options_json` (may be NULL): `model` (persists for later sends), `mode` (`"plan"`),
/// `mcpServers`, `local.force`, `cloud.envVars`, `enableDeltas`, `enableSteps`,
/// `idempotencyKey` (cloud agents), and `reclaimStaleRuns`. On success `*out` owns the run
/// (`cursor_run_free`).
///
/// A send refused because the agent is held by a run that no bridge of this client runs (made
/// by another bridge process, e.g. the queued run of every create, or left running by a bridge
/// that died) fails with `CURSOR_E_STALE_RUN`, naming the run. With `"reclaimStaleRuns": true`
/// that run is cancelled by id and the send made again.
///
/// Blocks until the stream is open and its first frame came, bounded by `requestTimeoutMs`
/// (plus the bridge's start on first use, `startupTimeoutMs`, and with reclaiming a few more
/// RPCs, each bounded the same way).
///
/// # Safety
/// `message` must be NUL-terminated; `send_options_json` NULL or NUL-terminated; `out` valid.
cursor_status cursor_agent_send(cursor_agent *a,
                                const char *message,
                                const char *CURSOR_NULLABLE send_options_json,
                                cursor_run *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Releases the bridge's in-memory agent (its durable state stays; resume brings it back).
/// The handle stays valid for management calls and must still be freed. Blocks for one RPC;
/// safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_close(cursor_agent *a, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Reloads the agent's durable state from its store. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_reload(cursor_agent *a, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Archives the agent. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_archive(cursor_agent *a, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Restores the archived agent. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_unarchive(cursor_agent *a, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Deletes the agent and its durable data (`CURSOR_E_FAILED_PRECONDITION` while a run is live). Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_delete(cursor_agent *a, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The agent's metadata from its store (`SdkAgentInfo` JSON). Owned result. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_info(cursor_agent *a,
                                char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Messages recorded for the agent, as a JSON array of `AgentMessage`. `options_json` (may be
/// NULL): `limit`, `offset`, `runtime`, `cwd`, `apiKey`. Owned result.
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated.
cursor_status cursor_agent_messages(cursor_agent *a,
                                    const char *CURSOR_NULLABLE options_json,
                                    char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The agent's artifacts, as a JSON array of `{path,sizeBytes,updatedAt}`. Owned result. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `a`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_agent_artifacts(cursor_agent *a,
                                     char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                     cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Token usage and cost (`AgentUsage` JSON), for one run when `run_id` is not NULL. Cloud agents.
///
/// # Safety
/// `run_id` must be NULL or NUL-terminated.
cursor_status cursor_agent_usage(cursor_agent *a,
                                 const char *CURSOR_NULLABLE run_id,
                                 char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                 cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Downloads an artifact. On success `*data_out` owns `*len_out` bytes, freed with
/// `cursor_bytes_free(data, len)` (`*data_out` may be NULL when the artifact is empty).
///
/// # Safety
/// `path` must be NUL-terminated; `data_out` and `len_out` valid.
cursor_status cursor_agent_download_artifact(cursor_agent *a,
                                             const char *path,
                                             uint8_t *CURSOR_NULLABLE *CURSOR_NONNULL data_out,
                                             size_t *len_out,
                                             cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Frees bytes from `cursor_agent_download_artifact`. NULL is accepted.
///
/// # Safety
/// `data`/`len` must be exactly what the library returned, not yet freed.
void cursor_bytes_free(uint8_t *CURSOR_NULLABLE data, size_t len);

/// Frees an agent handle (the agent itself lives on in the bridge; see `cursor_agent_close`).
/// NULL is accepted. Runs from this agent stay valid.
///
/// # Safety
/// `a` must be NULL or an agent from this library not yet freed.
void cursor_agent_free(cursor_agent *CURSOR_NULLABLE a);

/// Creates a client. `options_json` may be NULL (or `"{}"`): the bridge is found automatically
/// (`CURSOR_SDK_BRIDGE_BIN`, the fetched cache, then `PATH`), the workspace is the current
/// directory and the API key comes from `CURSOR_API_KEY`. Keys (camelCase or snake_case):
/// `bridgePath`, `workspace`, `apiKey`, `bridgeUrl` + `bridgeToken` (attach to a running bridge,
/// which is then never stopped by us; also `CURSOR_SDK_BRIDGE_URL`/`CURSOR_SDK_BRIDGE_TOKEN`),
/// `startupTimeoutMs` (30000; 1..600000), `requestTimeoutMs` (60000; 1..86400000: the bound of
/// every call to the bridge, retries included), `streamIdleTimeoutMs` (60000; 1..86400000:
/// each stream frame, event or keepalive, must arrive whole within it),
/// `maxFrameBytes` (64 MiB; 1 KiB..1 GiB), `maxRetries` (0..10, default 0: how often read-only
/// calls are retried on unavailable, rate-limited or lost connections, with backoff and jitter,
/// honouring the bridge's retry-after), `toolTimeoutMs`, `verbose`, `eager` (start the bridge
/// now instead of on first use), `localStore`, `bridgeEnv` (object), `bridgeArgs` (array),
/// `sharedBridge` (use this user's shared warm bridge for the configuration, starting it if there
/// is none; it outlives the client and exits after `sharedBridgeIdleMs`, 600000; 1..86400000,
/// without a client; default: on when `CURSOR_SDK_SHARED_BRIDGE=1`, `false` wins over it; with
/// custom tools, a store handler or `bridgeUrl` it is `CURSOR_E_INVALID_ARGUMENT`).
/// Unknown keys, values out of range, a malformed `bridgeUrl` (not `http://host:port`) and a
/// `workspace` that is not a directory are `CURSOR_E_INVALID_ARGUMENT`, naming the key.
///
/// On success `*out` owns a client to free with `cursor_client_free`. Without `eager` this does
/// not block; with it, it waits for the bridge (up to `startupTimeoutMs`). The client belongs to
/// the calling process: after `fork()`, every call on it in the child fails at once with
/// `CURSOR_E_USAGE` (create a new client there).
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated; `out` must be a valid pointer; `err` NULL or valid.
cursor_status cursor_client_new(const char *CURSOR_NULLABLE options_json,
                                cursor_client *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Frees a client and stops the bridge it launched: the `Shutdown` RPC (at most 1 s), then
/// signals (a few seconds at worst for a bridge that ignores them; usually well under 100 ms).
/// An attached bridge is left running. Then the callback server stops: by the time this returns
/// no tool or store callback is running and every `user_data_free` has run, whatever agent and
/// run handles are still alive. Calls on those handles fail with `CURSOR_E_USAGE` afterwards
/// (they must still be freed). NULL is accepted. Must not be called while another thread still
/// uses this client. In a forked child it releases the handle only: the bridge, its threads and
/// the callbacks belong to the parent and are left alone.
///
/// # Safety
/// `c` must be NULL or a client from `cursor_client_new` not yet freed.
void cursor_client_free(cursor_client *CURSOR_NULLABLE c);

/// Starts the bridge now (a no-op when it runs already or the client is attached). Blocks up to
/// `startupTimeoutMs`; with custom tools, plus their registration (`requestTimeoutMs`) and, when
/// that fails, the stop of the bridge that failed (about 1 s). After the bridge died, the next call
/// (this one, or any client or agent call) starts a new one.
///
/// # Safety
/// `c`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_client_start(cursor_client *c, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Checks that the bridge is up and accepts our token (`Ping`). Starts the bridge if needed. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `c`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_client_ping(cursor_client *c, cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The bridge's version as JSON: `{"bridgeVersion","protocolVersion","capabilities":[…],
/// "sdkVersion"}`, where `sdkVersion` is the cursor-sdk release a launched bridge ships in
/// (from its `manifest.json`; null when attached or unknown): every release reports bridge
/// version "1.0.0", so this is what tells them apart.
/// On success `*json_out` is an owned string for `cursor_string_free`. Blocks for one RPC (bounded by `requestTimeoutMs`); safe from any thread.
///
/// # Safety
/// `c`, `json_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_client_version(cursor_client *c,
                                    char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Stops a launched bridge now (bounded as in `cursor_client_free`); later calls on this client
/// fail with `CURSOR_E_USAGE`. Idempotent and safe from any thread (e.g. from a signal-handling
/// thread, not a signal handler).
///
/// # Safety
/// `c`: NULL or as documented above (handles live and from this library; out-pointers valid).
void cursor_client_shutdown(cursor_client *c);

/// The account of the API key (`api_key`, or the client's when NULL) as JSON (`SdkUser`).
/// Needs the Cursor backend. Owned result for `cursor_string_free`.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
cursor_status cursor_client_me(cursor_client *c,
                               const char *CURSOR_NULLABLE api_key,
                               char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                               cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The models the account may use, as a JSON array of `SdkModel`. Owned result.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
cursor_status cursor_client_models(cursor_client *c,
                                   const char *CURSOR_NULLABLE api_key,
                                   char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                   cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The repositories the account can use with cloud agents, as a JSON array. Owned result.
///
/// # Safety
/// `api_key` must be NULL or NUL-terminated.
cursor_status cursor_client_repositories(cursor_client *c,
                                         const char *CURSOR_NULLABLE api_key,
                                         char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                         cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// One agent's metadata (`SdkAgentInfo` JSON). `options_json` (may be NULL): `{"cwd","apiKey"}`;
/// the cwd defaults to the client's workspace. Owned result.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_get_agent(cursor_client *c,
                                      const char *agent_id,
                                      const char *CURSOR_NULLABLE options_json,
                                      char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                      cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// One page of agents: `{"items":[SdkAgentInfo…],"nextCursor":"…"|null}`. `options_json` (may be
/// NULL): `limit`, `cursor` (a previous `nextCursor`), `runtime` (`"local"`/`"cloud"`), `cwd`,
/// `prUrl`, `includeArchived`, `apiKey`. Owned result.
///
/// # Safety
/// `options_json` must be NULL or NUL-terminated.
cursor_status cursor_client_list_agents(cursor_client *c,
                                        const char *CURSOR_NULLABLE options_json,
                                        char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                        cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Archives an agent by id. `options_json` as for `cursor_client_get_agent`.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_archive_agent(cursor_client *c,
                                          const char *agent_id,
                                          const char *CURSOR_NULLABLE options_json,
                                          cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Restores an archived agent by id.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_unarchive_agent(cursor_client *c,
                                            const char *agent_id,
                                            const char *CURSOR_NULLABLE options_json,
                                            cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Deletes an agent and its durable data by id (`CURSOR_E_FAILED_PRECONDITION` while a run of
/// it is live: cancel the run first).
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_delete_agent(cursor_client *c,
                                         const char *agent_id,
                                         const char *CURSOR_NULLABLE options_json,
                                         cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// One page of an agent's runs: `{"items":[RunSnapshot…],"nextCursor":…}`. `options_json`:
/// `limit`, `cursor`, `runtime`, `cwd`, `apiKey`. Listing a run that is streaming right now
/// detaches the bridge's live handle: do not list while you stream a run of this agent.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_list_runs(cursor_client *c,
                                      const char *agent_id,
                                      const char *CURSOR_NULLABLE options_json,
                                      char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                      cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// A run's snapshot (`RunSnapshot` JSON). `options_json`: `runtime`, `cwd`, `agentId`, `apiKey`.
/// The same live-run caveat as `cursor_client_list_runs` applies.
///
/// # Safety
/// String arguments must be NULL (where allowed) or NUL-terminated.
cursor_status cursor_client_get_run(cursor_client *c,
                                    const char *run_id,
                                    const char *CURSOR_NULLABLE options_json,
                                    char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Cancels a run by id: for runs this process has no handle of, and for stale runs that hold an
/// agent (`CURSOR_E_STALE_RUN`: made by another bridge process, or left running by one that
/// died). `options_json` (may be NULL): `{"cwd"}` where the agent's store lives (default: the
/// client's workspace). A run that is over is left as it is. Blocks for up to three RPCs, each
/// bounded by `requestTimeoutMs`.
///
/// # Safety
/// `agent_id` and `run_id` must be NUL-terminated; `options_json` NULL or NUL-terminated.
cursor_status cursor_client_cancel_run(cursor_client *c,
                                       const char *agent_id,
                                       const char *run_id,
                                       const char *CURSOR_NULLABLE options_json,
                                       cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// A run's conversation document (JSON text, as the bridge keeps it). Owned result.
///
/// # Safety
/// `run_id` must be NUL-terminated.
cursor_status cursor_client_run_conversation(cursor_client *c,
                                             const char *run_id,
                                             char *CURSOR_NULLABLE *CURSOR_NONNULL json_out,
                                             cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// One-shot: with a process-wide default client (default options, started on first use and
/// stopped at exit), creates an agent from `agent_options_json` (NULL allowed, e.g.
/// `{"model":"composer-2"}`), sends `prompt`, waits for the end and closes the agent. On success
/// `*text_out` owns the final assistant text. A run that ended with status error or expired gives
/// `CURSOR_E_RUN_FAILED`, a cancelled one `CURSOR_E_CANCELLED`, each with the run's reason as
/// the message. Blocks for the whole run (bounded as for `cursor_run_wait`); thread-safe. In a
/// forked child of a process that used it, fails at once with `CURSOR_E_USAGE`.
///
/// # Safety
/// `prompt` must be NUL-terminated, `agent_options_json` NULL or NUL-terminated, `text_out` valid.
cursor_status cursor_prompt(const char *prompt,
                            const char *CURSOR_NULLABLE agent_options_json,
                            char *CURSOR_NULLABLE *CURSOR_NONNULL text_out,
                            cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The error's kind as a (negative) status code, e.g. `CURSOR_E_NOT_FOUND`.
/// NULL gives `CURSOR_E_INVALID_ARGUMENT`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_error_kind(const cursor_error *e);

/// A readable message: `"<kind>: <text>"`, plus the request id when there is one. Never NULL
/// for a valid error (NULL for a NULL error). Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_error_message(const cursor_error *e);

/// The Connect code the bridge sent (`"not_found"`, `"internal"`…), or NULL when the error did
/// not come from the bridge. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_error_connect_code(const cursor_error *e);

/// The bridge's `SdkErrorCode` (0 when absent). Values the header does not know are kept as
/// they came. NULL gives 0.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
int32_t cursor_error_sdk_code(const cursor_error *e);

/// The full request id from Cursor Cloud, or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_error_request_id(const cursor_error *e);

/// How long to wait before retrying, in milliseconds, or -1 when the bridge did not say.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
int64_t cursor_error_retry_after_ms(const cursor_error *e);

/// Rate-limit details. Returns true when the error carries them, and then writes each known
/// value through the non-NULL pointers (an unknown one is written as `UINT64_MAX`).
///
/// # Safety
/// Each out-pointer must be NULL or valid for a `uint64_t` write.
bool cursor_error_rate_limit(const cursor_error *e,
                             uint64_t *CURSOR_NULLABLE limit,
                             uint64_t *CURSOR_NULLABLE remaining,
                             uint64_t *CURSOR_NULLABLE reset_epoch_seconds);

/// A link to documentation or remediation, or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_error_help_url(const cursor_error *e);

/// The upstream provider when the failure came from outside Cursor, or NULL. Borrowed until
/// `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_error_provider(const cursor_error *e);

/// The run the error is about (`CURSOR_E_STALE_RUN`: the run that holds the agent, to pass to
/// `cursor_client_cancel_run`), or NULL. Borrowed until `cursor_error_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_error_run_id(const cursor_error *e);

/// The HTTP status of the response that carried the error (200 for errors inside a stream), or
/// 0 when there was no response.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
int32_t cursor_error_http_status(const cursor_error *e);

/// Whether retrying the same call may succeed (transport trouble, rate limits, a retry-after).
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
bool cursor_error_retryable(const cursor_error *e);

/// Frees an error. NULL is accepted. The error's strings become invalid.
///
/// # Safety
/// `e` must be NULL or an error from this library not yet freed.
void cursor_error_free(cursor_error *CURSOR_NULLABLE e);

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
void cursor_set_log_callback(int32_t level,
                             cursor_log_fn CURSOR_NULLABLE fn,
                             void *CURSOR_NULLABLE user_data,
                             cursor_free_fn CURSOR_NULLABLE user_data_free);

/// Takes the next event. `timeout_ms`: 0 polls without blocking, a negative value waits as long
/// as it takes. Returns `CURSOR_OK` with `*out` owning an event (`cursor_event_free`),
/// `CURSOR_TIMEOUT` when none arrived in time, `CURSOR_END` after the last event, or an error
/// (reported once; `CURSOR_END` follows). Keepalives never surface. Fails with `CURSOR_E_USAGE`
/// in push mode.
///
/// Blocks at most `timeout_ms`. However the bridge behaves, the stream ends: a silent stream is
/// dead after `streamIdleTimeoutMs`, re-attaching to it takes at most `streamIdleTimeoutMs` plus
/// `requestTimeoutMs`, and a bridge that does not answer ends the run with `CURSOR_E_DEADLINE`.
/// After `cursor_run_cancel` the stream ends within `requestTimeoutMs` (normally milliseconds).
///
/// # Safety
/// `r` must be a live run handle and `out` a valid pointer; `err` NULL or valid.
cursor_status cursor_run_next_event(cursor_run *r,
                                    int32_t timeout_ms,
                                    cursor_event *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Waits for the run to end (consuming the remaining events) and writes the result as JSON to
/// `*result_json_out` (owned; may be NULL to skip): `{"runId","agentId","status":"finished"|
/// "error"|"cancelled"|"expired","text","model","durationMs","usage","git","errorCode",
/// "errorMessage"}`. A run that failed, was cancelled or expired is still `CURSOR_OK` here: read
/// `status`. `timeout_ms` < 0 waits until the end (bounded as for `cursor_run_next_event`); when
/// `timeout_ms` passes first, returns `CURSOR_TIMEOUT` (not an error; `*result_json_out` stays
/// NULL) and the run goes on.
///
/// # Safety
/// `result_json_out` must be NULL or valid.
cursor_status cursor_run_wait(cursor_run *r,
                              int32_t timeout_ms,
                              char *CURSOR_NULLABLE *CURSOR_NULLABLE result_json_out,
                              cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Cancels the run. Never blocks (safe in a frame loop): a library thread asks the bridge, as
/// soon as the run id is known, and the outcome shows in the stream, which ends with status
/// cancelled (a reader blocked in `cursor_run_next_event` or `cursor_run_wait` wakes). If the
/// bridge does not end the stream within `requestTimeoutMs`, the run is ended here with a
/// `CURSOR_E_CANCELLED` error event. Safe from any thread, including inside the push callback;
/// idempotent; on a run already over it does nothing. Returns `CURSOR_OK`, or
/// `CURSOR_E_INVALID_ARGUMENT` for NULL, `CURSOR_E_USAGE` in a forked child.
///
/// # Safety
/// `r` must be NULL or a live run handle; `err` NULL or valid.
cursor_status cursor_run_cancel(cursor_run *CURSOR_NULLABLE r,
                                cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The run id (known once `cursor_agent_send` returned). Borrowed until `cursor_run_free`;
/// `""` if the bridge has not named the run. Safe from any thread.
///
/// # Safety
/// `r`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_run_id(const cursor_run *r);

/// The latest status seen on the stream. Safe from any thread. NULL gives `CURSOR_RUN_INVALID`.
///
/// # Safety
/// `r` must be NULL or a live run handle.
cursor_run_status_t cursor_run_status(const cursor_run *CURSOR_NULLABLE r);

/// The assistant text streamed so far (the final text once the run ended). Owned result.
///
/// # Safety
/// `r`, `text_out`, `err`: NULL or as documented above (handles live and from this library; out-pointers valid).
cursor_status cursor_run_text(cursor_run *r,
                              char *CURSOR_NULLABLE *CURSOR_NONNULL text_out,
                              cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Opens the run's durable event stream after `after_offset` (NULL: from the start; offsets
/// from a previous observe, since `Send` numbers differently). `*out` owns a new run handle
/// whose events are the replayed and then live events.
///
/// # Safety
/// `after_offset` must be NULL or NUL-terminated; `out` valid.
cursor_status cursor_run_observe(cursor_run *r,
                                 const char *CURSOR_NULLABLE after_offset,
                                 cursor_run *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                 cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// A descriptor that becomes readable when the run has events or has ended, for `poll`/`select`/
/// kqueue/epoll loops: when readable, call `cursor_run_next_event(r, 0, …)` until it returns
/// `CURSOR_TIMEOUT` (which re-arms it) or `CURSOR_END`. Owned by the run (do not close it);
/// valid until `cursor_run_free`. Returns -1 on error or where unsupported (Windows).
///
/// # Safety
/// `r`: NULL or as documented above (handles live and from this library; out-pointers valid).
int32_t cursor_run_wait_fd(cursor_run *r);

/// Switches the run to push mode: a library thread calls `fn` for each event, in order, then
/// once more as the final call (see `cursor_event_fn`). `user_data` is passed through untouched;
/// release it in the final call. Fails with `CURSOR_E_USAGE` if a callback is already set;
/// `fn` NULL is `CURSOR_E_INVALID_ARGUMENT`. Do not poll the run once a callback is set.
/// `cursor_run_free` during push mode stops delivery: it waits for a callback in progress, then
/// the final call is made (with a `CURSOR_E_CANCELLED` error unless the stream had ended)
/// before `cursor_run_free` returns.
///
/// # Safety
/// `fn` must be safe to call from another thread with `user_data`.
cursor_status cursor_run_set_callback(cursor_run *r,
                                      cursor_event_fn fn,
                                      void *CURSOR_NULLABLE user_data,
                                      cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Frees a run handle. NULL is accepted. It does not cancel the run in the bridge (call
/// `cursor_run_cancel` first for that); it stops reading at once (no network wait). In push
/// mode it waits for a callback in progress and for the final call (unless called from inside
/// the callback, when it returns at once and the final call follows the callback's return).
/// The wake descriptor is closed before it returns and never written afterwards. Safe from any
/// thread while another thread is blocked in `cursor_run_next_event` on a different handle;
/// never free a handle another thread is still using.
///
/// # Safety
/// `r` must be NULL or a run from this library not yet freed.
void cursor_run_free(cursor_run *CURSOR_NULLABLE r);

/// The event's kind. NULL gives `CURSOR_EVENT_INVALID`.
///
/// # Safety
/// `e` must be NULL or a live event.
cursor_event_kind_t cursor_event_kind(const cursor_event *CURSOR_NULLABLE e);

/// The event's type: "assistant", "status", "tool_call", "text-delta", "result", …
/// Borrowed until `cursor_event_free`; NULL for a NULL event.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_event_type(const cursor_event *e);

/// The event's payload as JSON text (snake_case keys inside messages, as the bridge sends
/// them). Built on the first call (the type and text never need it), so the first call on a
/// large message costs its decoding. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_event_json(const cursor_event *e);

/// The assistant text this event carries (an "assistant" message's text blocks, or a
/// "text-delta"), or NULL. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_event_text(const cursor_event *e);

/// The event's resume offset in its stream, or NULL. Borrowed until `cursor_event_free`.
///
/// # Safety
/// `e`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_event_offset(const cursor_event *e);

/// Frees an event. NULL is accepted. The calling thread keeps the event's memory (a few
/// hundred bytes) for the next event it receives; it is freed when that thread exits.
///
/// # Safety
/// `e` must be NULL or an event from this library not yet freed.
void cursor_event_free(cursor_event *CURSOR_NULLABLE e);

/// Registers a tool for every local agent this client creates or resumes from now on (it is
/// declared in their `local.custom_tools`; creating a cloud agent, or one that disallows the
/// `mcp` tool group, then fails with `CURSOR_E_INVALID_ARGUMENT` rather than losing the tool).
/// `name`: 1-64 of `A-Z a-z 0-9 _ -`. `input_schema_json`: a JSON Schema object (NULL means
/// `{"type":"object"}`). `fn` is called for each call (see `cursor_tool_fn`). `user_data_free`
/// (may be NULL) runs exactly once, when the tool can no longer be called: after a replacing
/// registration once no call of it is running, and at the latest before `cursor_client_free`
/// returns, whatever agent or run handles are still alive (`cursor_client_free` waits for
/// tool calls in progress to return, answers calls still waiting for a late answer with an
/// error — completing them afterwards is `CURSOR_E_USAGE` — and then releases every tool).
/// Called from inside a tool or store callback, `cursor_client_free` does not wait for that
/// callback: its own `user_data_free` runs as it returns. On failure nothing is registered and
/// `user_data_free` is not called. A tool of the same name is replaced. After
/// `cursor_client_free` has begun, registering fails with `CURSOR_E_USAGE`.
///
/// # Safety
/// Strings must be NUL-terminated (or NULL where allowed); `fn` and `user_data_free` must be
/// safe to call from other threads with `user_data`.
cursor_status cursor_client_add_tool(cursor_client *c,
                                     const char *name,
                                     const char *CURSOR_NULLABLE description,
                                     const char *CURSOR_NULLABLE input_schema_json,
                                     cursor_tool_fn fn,
                                     void *CURSOR_NULLABLE user_data,
                                     cursor_free_fn CURSOR_NULLABLE user_data_free,
                                     cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// The tool's name. Borrowed until `cursor_tool_call_free`.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_tool_call_name(const cursor_tool_call *call);

/// The arguments as JSON text (an object; numbers are doubles). Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_tool_call_args_json(const cursor_tool_call *call);

/// The tool-call id (to match stream events), or NULL. Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *CURSOR_NULLABLE cursor_tool_call_id(const cursor_tool_call *call);

/// The id of the agent whose run called the tool. Borrowed until free.
///
/// # Safety
/// `call`: NULL or as documented above (handles live and from this library; out-pointers valid).
const char *cursor_tool_call_agent_id(const cursor_tool_call *call);

/// Answers a tool call with a result: any JSON value (an object passes through; a string or
/// other value is wrapped as text content). Exactly once per call, from any thread: a second
/// answer (or one after the call timed out) is `CURSOR_E_USAGE`. Malformed JSON is
/// `CURSOR_E_INVALID_ARGUMENT` and leaves the call unanswered.
///
/// # Safety
/// `call` must be a live call handle; `result_json` NUL-terminated.
cursor_status cursor_tool_call_complete(cursor_tool_call *call,
                                        const char *result_json,
                                        cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Answers a tool call with an error the model sees (the run goes on). Exactly once per call,
/// like `cursor_tool_call_complete`.
///
/// # Safety
/// `call` must be a live call handle; `message` NUL-terminated.
cursor_status cursor_tool_call_fail(cursor_tool_call *call,
                                    const char *message,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Frees a tool call. A call still unanswered is answered with an error ("dropped without an
/// answer"). NULL is accepted. Do not free a call another thread is completing.
///
/// # Safety
/// `call` must be NULL or a call handle not yet freed.
void cursor_tool_call_free(cursor_tool_call *CURSOR_NULLABLE call);

/// Registers a queued tool: like `cursor_client_add_tool` (same name rules, scope and
/// replacement; `description` may be NULL; `input_schema_json` may be NULL, meaning
/// `{"type":"object"}`), but no callback runs on a library thread. Each call waits on the client until
/// `cursor_client_next_tool_call` hands it over, for hosts that must answer on their own thread
/// (event loops, scripting VMs such as LuaJIT, game engines); `cursor_client_tool_fd` wakes
/// their loop. A call left unanswered is answered with an error after the tool timeout, and
/// `cursor_client_free` answers every queued or handed-over call still unanswered with the error
/// "the client was closed before the tool answered" (completing one afterwards is
/// `CURSOR_E_USAGE`). The queue is bounded: each waiting call holds one of the callback
/// server's 64 connections, and further calls wait in the bridge. Does not block. After `cursor_client_free` has begun, fails with
/// `CURSOR_E_USAGE`.
///
/// # Safety
/// `c` a live client; strings NUL-terminated (or NULL where allowed); `err` NULL or valid.
cursor_status cursor_client_add_queued_tool(cursor_client *c,
                                            const char *name,
                                            const char *CURSOR_NULLABLE description,
                                            const char *CURSOR_NULLABLE input_schema_json,
                                            cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Hands over the oldest queued tool call: `CURSOR_OK` with `*out` owned by you (answer it
/// with `cursor_tool_call_complete`/`cursor_tool_call_fail`, from any thread, and free it with
/// `cursor_tool_call_free`), or `CURSOR_TIMEOUT` with `*out` NULL when none is queued. Never
/// blocks (it only takes a short lock). Safe from any thread; each call is handed over once.
///
/// # Safety
/// `c` a live client; `out` a valid pointer; `err` NULL or valid.
cursor_status cursor_client_next_tool_call(cursor_client *c,
                                           cursor_tool_call *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                           cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// A descriptor that is readable while queued tool calls wait (see
/// `cursor_client_add_queued_tool`), for `poll`/`select`/kqueue/epoll loops: when readable,
/// call `cursor_client_next_tool_call` until it returns `CURSOR_TIMEOUT` (which lowers it).
/// Close-on-exec and non-blocking, like `cursor_run_wait_fd`. Owned by the client (do not close
/// or read it); valid until `cursor_client_free`, which closes it. Returns -1 on error, in a
/// forked child, or where unsupported (Windows).
///
/// # Safety
/// `c` NULL or a live client.
int32_t cursor_client_tool_fd(cursor_client *CURSOR_NULLABLE c);

/// Creates a client (like `cursor_client_new`) whose bridge keeps all local agent state in your
/// store: it is launched with a custom local store, and every store operation calls `fn`
/// (see `cursor_store_fn`; return bare records, e.g. the agent object for agents.get, and NULL
/// for a miss). `user_data_free` (may be NULL) runs exactly once after the last call, before
/// `cursor_client_free` returns, whatever agent or run handles are still alive
/// (`cursor_client_free` waits for store calls in progress to return; as for tools, from
/// inside a callback it does not wait for that callback); on failure here it is not called.
/// Attach mode (`bridgeUrl`) cannot take a store.
///
/// # Safety
/// As for `cursor_client_new`; `fn`/`user_data_free` must be safe from other threads.
cursor_status cursor_client_new_with_store(const char *CURSOR_NULLABLE options_json,
                                           cursor_store_fn fn,
                                           void *CURSOR_NULLABLE user_data,
                                           cursor_free_fn CURSOR_NULLABLE user_data_free,
                                           cursor_client *CURSOR_NULLABLE *CURSOR_NONNULL out,
                                           cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Replies to a store call with its output: JSON text, or NULL for a null result (a miss, a
/// delete). Once per call, before the callback returns (a second reply is `CURSOR_E_USAGE`).
///
/// # Safety
/// `reply` must be the pointer passed to the running callback.
cursor_status cursor_store_reply_ok(cursor_store_reply *reply,
                                    const char *CURSOR_NULLABLE output_json,
                                    cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

/// Replies to a store call with a failure; the bridge reports it to the caller of the agent
/// operation. Once per call, before the callback returns.
///
/// # Safety
/// `reply` must be the pointer passed to the running callback; `message` NUL-terminated.
cursor_status cursor_store_reply_error(cursor_store_reply *reply,
                                       const char *message,
                                       cursor_error *CURSOR_NULLABLE *CURSOR_NULLABLE err);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

CURSOR_ASSUME_NONNULL_END

#endif  /* CURSOR_SDK_H */
