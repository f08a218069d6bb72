import CCursorSDK
import Synchronization

/// Library-wide functions.
public enum Cursor {
    /// The C library's version (`"0.1.0"`).
    public static var libraryVersion: String { String(cString: cursor_sdk_version()) }

    /// One call: creates an agent with a process-wide default client (default options: the key
    /// from `CURSOR_API_KEY`, the bridge found automatically, this directory as the workspace),
    /// sends `prompt`, waits for the end and returns the reply. A run that failed or expired
    /// throws `.runFailed` with its reason; a cancelled one `.cancelled`. The call runs on a
    /// thread of its own; cancelling the awaiting task does not stop it.
    public static func prompt(
        _ prompt: String, model: ModelSelection? = nil, options: AgentOptions = AgentOptions()
    ) async throws(CursorError) -> String {
        var o = options
        if let model { o.model = model }
        let json = o.json.jsonText
        return try await offThePool { () throws(CursorError) in
            try ownedString { out, err in cursor_prompt(prompt, json, out, err) }
        }
    }

    /// Log severities.
    public enum LogLevel: Int32, Sendable {
        case error = 1, warn, info, debug
    }

    /// Receives the library's log lines at `level` or more severe (from any library thread,
    /// possibly concurrently; keep it quick), replacing the previous handler; `nil` removes it.
    /// Lines never contain the bridge token.
    public static func setLogHandler(
        level: LogLevel = .info, _ handler: (@Sendable (LogLevel, String) -> Void)?
    ) {
        guard let handler else {
            cursor_set_log_callback(level.rawValue, nil, nil, nil)
            return
        }
        let user = Unmanaged.passRetained(LogBox(handler) as AnyObject).toOpaque()
        cursor_set_log_callback(level.rawValue, logTrampoline, user, releaseBox)
    }
}

final class LogBox: Sendable {
    let handler: @Sendable (Cursor.LogLevel, String) -> Void
    init(_ handler: @escaping @Sendable (Cursor.LogLevel, String) -> Void) { self.handler = handler }
}

let logTrampoline: cursor_log_fn = { user, level, message in
    guard let user else { return }
    let box = Unmanaged<LogBox>.fromOpaque(user).takeUnretainedValue()
    box.handler(Cursor.LogLevel(rawValue: Int32(level.rawValue)) ?? .debug, String(cString: message))
}
