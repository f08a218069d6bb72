import CCursorSDK
import Synchronization

/// One call of a custom tool.
public struct ToolCall: Sendable, Hashable {
    public var name: String
    /// The arguments the model gave (an object; numbers are doubles).
    public var arguments: JSONValue
    /// The tool-call id, to match `.toolCall` stream events.
    public var id: String?
    public var agentId: String
}

/// A tool's handler, carried through the library's `user_data`: retained once at registration,
/// released once by the library's `user_data_free`.
final class ToolBox: Sendable {
    let handler: @Sendable (ToolCall) async throws -> JSONValue
    /// Boxes alive now (tests hold this to zero after a client is freed).
    static let live = Atomic<Int>(0)

    init(_ handler: @escaping @Sendable (ToolCall) async throws -> JSONValue) {
        self.handler = handler
        Self.live.add(1, ordering: .relaxed)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }
}

/// A call handle waiting for its answer. The library lets any thread complete a call once.
private struct PendingCall: Sendable {
    nonisolated(unsafe) let raw: OpaquePointer
}

/// The C side of every tool: copies the call, then answers it later from a task (the library
/// thread returns at once).
let toolTrampoline: cursor_tool_fn = { user, call in
    let pending = PendingCall(raw: call)
    guard let user else {
        cursor_tool_call_fail(call, "internal: tool without a handler", nil)
        cursor_tool_call_free(call)
        return
    }
    let box = Unmanaged<ToolBox>.fromOpaque(user).takeUnretainedValue()
    let handler = box.handler
    let args = (try? JSONValue(parsing: String(cString: cursor_tool_call_args_json(call)))) ?? .object([:])
    let info = ToolCall(
        name: String(cString: cursor_tool_call_name(call)), arguments: args,
        id: cursor_tool_call_id(call).map { String(cString: $0) },
        agentId: String(cString: cursor_tool_call_agent_id(call)))
    Task {
        do {
            let result = try await handler(info)
            cursor_tool_call_complete(pending.raw, result.jsonText, nil)
        } catch let e as CursorError {
            cursor_tool_call_fail(pending.raw, e.message, nil)
        } catch {
            cursor_tool_call_fail(pending.raw, String(describing: error), nil)
        }
        // An answer after the client was freed is refused (the call was answered then); either
        // way the handle is ours to free.
        cursor_tool_call_free(pending.raw)
    }
}

/// Releases a box given to the library (its `user_data_free`).
let releaseBox: cursor_free_fn = { user in
    if let user { Unmanaged<AnyObject>.fromOpaque(user).release() }
}

extension CursorClient {
    /// Registers a tool for every local agent this client creates or resumes from now on.
    /// `handler` runs in a task for each call (possibly several at once); what it returns is the
    /// result (an object passes through, a string becomes text content); an error it throws
    /// becomes an error result the model sees, and the run goes on. The closure is released when
    /// the tool is replaced (once no call of it runs) or the client is freed.
    public func addTool(
        name: String, description: String? = nil, schema: JSONValue = ["type": "object"],
        _ handler: @escaping @Sendable (ToolCall) async throws -> JSONValue
    ) throws(CursorError) {
        let user = Unmanaged.passRetained(ToolBox(handler) as AnyObject).toOpaque()
        do {
            try check { cursor_client_add_tool(raw, name, description, schema.jsonText, toolTrampoline, user, releaseBox, $0) }
        } catch {
            // On failure nothing is registered and user_data_free is not called.
            Unmanaged<AnyObject>.fromOpaque(user).release()
            throw error
        }
    }
}
