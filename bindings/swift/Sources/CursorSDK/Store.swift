import CCursorSDK
import Synchronization

/// A custom store for the bridge's local agent records (`CursorClient(options, store:)`).
///
/// `handle` is called on library threads, possibly concurrently, and must answer before it
/// returns (the bridge waits for it). `substore` is `"agents"`, `"runs"`, `"runEvents"` or
/// `"checkpoints"`; `method` is `"get"`, `"create"`, `"update"`, `"delete"`, `"list"` or
/// `"append"`. Return the bare record (e.g. the agent object for `agents.get`), or `nil` for a
/// miss or nothing; a thrown error is reported to the caller of the agent operation.
public protocol AgentStore: Sendable {
    func handle(substore: String, method: String, input: JSONValue) throws -> JSONValue?
}

/// A store carried through the library's `user_data` (retained once, released once).
final class StoreBox: Sendable {
    let store: any AgentStore
    static let live = Atomic<Int>(0)

    init(_ store: any AgentStore) {
        self.store = store
        Self.live.add(1, ordering: .relaxed)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }
}

let storeTrampoline: cursor_store_fn = { user, substore, method, input, reply in
    guard let user else {
        cursor_store_reply_error(reply, "internal: store without a handler", nil)
        return
    }
    let box = Unmanaged<StoreBox>.fromOpaque(user).takeUnretainedValue()
    do {
        let value = try JSONValue(parsing: String(cString: input))
        let out = try box.store.handle(substore: String(cString: substore), method: String(cString: method), input: value)
        cursor_store_reply_ok(reply, out.map(\.jsonText), nil)
    } catch let e as CursorError {
        cursor_store_reply_error(reply, e.message, nil)
    } catch {
        cursor_store_reply_error(reply, String(describing: error), nil)
    }
}
