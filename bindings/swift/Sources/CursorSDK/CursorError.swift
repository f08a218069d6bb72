import CCursorSDK

/// Every failure of the SDK: the library's error object, copied into a value.
public struct CursorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, one case per library status (`CURSOR_E_*`).
    public enum Kind: Sendable, Hashable {
        case invalidArgument, auth, permissionDenied, notFound, busy, rateLimited, unavailable
        case bridgeStartFailed, bridgeExited, transport, deadline, protocolViolation, cancelled
        case internalError, unsupported, failedPrecondition, usage, runFailed, staleRun
        /// A status this binding does not know yet (a newer library).
        case unknown(Int32)

        init(status: cursor_status) {
            switch status {
            case .CURSOR_E_INVALID_ARGUMENT: self = .invalidArgument
            case .CURSOR_E_AUTH: self = .auth
            case .CURSOR_E_PERMISSION_DENIED: self = .permissionDenied
            case .CURSOR_E_NOT_FOUND: self = .notFound
            case .CURSOR_E_BUSY: self = .busy
            case .CURSOR_E_RATE_LIMITED: self = .rateLimited
            case .CURSOR_E_UNAVAILABLE: self = .unavailable
            case .CURSOR_E_BRIDGE_START_FAILED: self = .bridgeStartFailed
            case .CURSOR_E_BRIDGE_EXITED: self = .bridgeExited
            case .CURSOR_E_TRANSPORT: self = .transport
            case .CURSOR_E_DEADLINE: self = .deadline
            case .CURSOR_E_PROTOCOL: self = .protocolViolation
            case .CURSOR_E_CANCELLED: self = .cancelled
            case .CURSOR_E_INTERNAL: self = .internalError
            case .CURSOR_E_UNSUPPORTED: self = .unsupported
            case .CURSOR_E_FAILED_PRECONDITION: self = .failedPrecondition
            case .CURSOR_E_USAGE: self = .usage
            case .CURSOR_E_RUN_FAILED: self = .runFailed
            case .CURSOR_E_STALE_RUN: self = .staleRun
            case .CURSOR_OK, .CURSOR_TIMEOUT, .CURSOR_END: self = .unknown(status.rawValue)
            @unknown default: self = .unknown(status.rawValue)
            }
        }

        /// The library's short name for the kind (`"not_found"`…).
        public var name: String {
            switch self {
            case .invalidArgument: "invalid_argument"
            case .auth: "auth"
            case .permissionDenied: "permission_denied"
            case .notFound: "not_found"
            case .busy: "busy"
            case .rateLimited: "rate_limited"
            case .unavailable: "unavailable"
            case .bridgeStartFailed: "bridge_start_failed"
            case .bridgeExited: "bridge_exited"
            case .transport: "transport"
            case .deadline: "deadline"
            case .protocolViolation: "protocol"
            case .cancelled: "cancelled"
            case .internalError: "internal"
            case .unsupported: "unsupported"
            case .failedPrecondition: "failed_precondition"
            case .usage: "usage"
            case .runFailed: "run_failed"
            case .staleRun: "stale_run"
            case .unknown(let code): String(cString: cursor_status_name(code))
            }
        }
    }

    /// Rate-limit details the bridge sent (`nil` members: not sent).
    public struct RateLimit: Sendable, Hashable {
        public var limit: UInt64?
        public var remaining: UInt64?
        public var resetEpochSeconds: UInt64?
    }

    public var kind: Kind
    /// `"<kind>: <text>"`, plus the request id when there is one.
    public var message: String
    /// The Connect code the bridge sent (`"not_found"`, `"internal"`…), when it came from the bridge.
    public var connectCode: String?
    /// The bridge's `SdkErrorCode` (0 when absent).
    public var sdkCode: Int32 = 0
    /// The HTTP status of the response that carried the error (0: no response).
    public var httpStatus: Int32 = 0
    /// The request id from Cursor Cloud.
    public var requestId: String?
    /// How long to wait before retrying, when the bridge said.
    public var retryAfter: Duration?
    public var rateLimit: RateLimit?
    /// Whether the same call may succeed when retried.
    public var isRetryable = false
    /// The run the error is about (for `.staleRun`: the run holding the agent).
    public var runId: String?
    public var helpURL: String?
    /// The upstream provider, when the failure came from outside Cursor.
    public var provider: String?

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// Copies the library's error object (which the caller still frees).
    init(_ e: OpaquePointer) {
        kind = Kind(status: cursor_error_kind(e))
        message = String(cString: cursor_error_message(e))
        connectCode = cursor_error_connect_code(e).map { String(cString: $0) }
        sdkCode = cursor_error_sdk_code(e)
        httpStatus = cursor_error_http_status(e)
        requestId = cursor_error_request_id(e).map { String(cString: $0) }
        let ms = cursor_error_retry_after_ms(e)
        retryAfter = ms >= 0 ? .milliseconds(ms) : nil
        var limit: UInt64 = 0
        var remaining: UInt64 = 0
        var reset: UInt64 = 0
        if cursor_error_rate_limit(e, &limit, &remaining, &reset) {
            let known = { (v: UInt64) in v == UInt64.max ? nil : v }
            rateLimit = RateLimit(limit: known(limit), remaining: known(remaining), resetEpochSeconds: known(reset))
        }
        isRetryable = cursor_error_retryable(e)
        runId = cursor_error_run_id(e).map { String(cString: $0) }
        helpURL = cursor_error_help_url(e).map { String(cString: $0) }
        provider = cursor_error_provider(e).map { String(cString: $0) }
    }

    /// An error for `status` when the library gave no error object.
    init(status: cursor_status) {
        self.init(kind: Kind(status: status), message: String(cString: cursor_status_name(status.rawValue)))
    }

    public var description: String { message }
}

/// Runs one fallible C call with an error slot; a failure becomes a thrown `CursorError` (the
/// library's error object is copied, then freed). Returns the status (`CURSOR_OK`, or
/// `CURSOR_TIMEOUT`/`CURSOR_END` where the call has them).
@discardableResult
func check(_ body: (UnsafeMutablePointer<OpaquePointer?>) -> cursor_status) throws(CursorError) -> cursor_status {
    var err: OpaquePointer?
    let status = body(&err)
    defer { cursor_error_free(err) }
    if status.rawValue >= 0 { return status }
    if let err { throw CursorError(err) }
    throw CursorError(status: status)
}

/// A C call that returns an owned string through `char **`: the text, copied and freed.
func ownedString(
    _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, UnsafeMutablePointer<OpaquePointer?>) -> cursor_status
) throws(CursorError) -> String {
    var out: UnsafeMutablePointer<CChar>?
    try check { body(&out, $0) }
    defer { cursor_string_free(out) }
    guard let out else {
        throw CursorError(kind: .internalError, message: "the library returned no string")
    }
    return String(cString: out)
}

/// As `ownedString`, parsed as JSON.
func ownedJSON(
    _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, UnsafeMutablePointer<OpaquePointer?>) -> cursor_status
) throws(CursorError) -> JSONValue {
    try JSONValue(parsing: ownedString(body))
}
