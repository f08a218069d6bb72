import CCursorSDK
import Synchronization

/// A live run: what `Agent.send` returns. Read it with `events` (every event), `text` (the reply
/// as it streams) and `result` (how it ended), as often as you like and from any task: the run
/// keeps its events until it is freed. Reading never blocks a thread: the events are drained on a
/// private dispatch queue when the library's wake descriptor says there are some, and readers
/// suspend until then.
///
/// Cancelling a task that reads stops that read (it throws `CancellationError`); the run goes
/// on in the bridge. `cancel()` cancels the run itself. Dropping the last reference frees the
/// handle, which stops reading but does not cancel the run either.
public final class Run: Sendable {
    /// Keeps the client (and its bridge) alive while the run is read.
    public let client: CursorClient
    // The C API allows any thread for id/status/cancel; reading happens only in the pump.
    nonisolated(unsafe) let raw: OpaquePointer
    public let id: String
    public let agentId: String
    /// `text` yields the deltas when the send asked for them (else the assistant messages).
    private let textFromDeltas: Bool
    private let feed = RunFeed()
    private let pump = Mutex<RunPump?>(nil)

    init(client: CursorClient, raw: OpaquePointer, agentId: String, deltas: Bool) {
        self.client = client
        self.raw = raw
        self.agentId = agentId
        self.textFromDeltas = deltas
        id = String(cString: cursor_run_id(raw))
    }

    deinit {
        pump.withLock { $0 }?.stop()
        cursor_run_free(raw)
    }

    /// The latest status seen on the stream.
    public var status: RunStatus { RunStatus(cursor_run_status(raw)) }

    /// Cancels the run in the bridge. Never blocks; the stream then ends with status `.cancelled`.
    public func cancel() throws(CursorError) {
        try check { cursor_run_cancel(raw, $0) }
    }

    /// Every event of the run, from the first, then `nil`; a failed stream throws its error after
    /// the last event.
    public var events: RunEvents { RunEvents(run: self) }

    /// The assistant's reply in chunks, as it streams.
    public var text: RunText { RunText(events: events, fromDeltas: textFromDeltas) }

    /// The run's status changes (its `.status` events), as they stream.
    public var statusUpdates: RunStatusUpdates { RunStatusUpdates(events: events) }

    /// How the run ended, once it has. A run that failed, expired or was cancelled still has a
    /// result (read `status` and `errorMessage`); a stream that broke throws.
    public var result: RunResult {
        get async throws {
            try startPump()
            return try await feed.outcome()
        }
    }

    /// Opens the run's durable event stream again (a new `Run`), after `offset` (an event offset
    /// of a previous `observe`; `nil`: from the start).
    public func observe(after offset: String? = nil) throws(CursorError) -> Run {
        var out: OpaquePointer?
        try check { cursor_run_observe(raw, offset, &out, $0) }
        guard let out else { throw CursorError(kind: .internalError, message: "internal: observe gave no run") }
        return Run(client: client, raw: out, agentId: agentId, deltas: false)
    }

    func startPump() throws(CursorError) {
        try pump.withLock { (p: inout RunPump?) throws(CursorError) in
            if p == nil { p = try RunPump(raw: raw, feed: feed) }
        }
    }

    func events(from index: Int) async throws -> [RunEvent] {
        try startPump()
        return try await feed.events(from: index, max: RunEvents.chunk)
    }
}

/// The events of a run (see `Run.events`).
public struct RunEvents: AsyncSequence, Sendable {
    public typealias Element = RunEvent
    let run: Run

    /// Most events an iterator takes from the run at once: what has arrived is handed over in
    /// chunks, so a fast stream costs one lock and one suspension point per chunk, not per event.
    static let chunk = 256

    public struct AsyncIterator: AsyncIteratorProtocol {
        let run: Run
        var index = 0
        var taken: [RunEvent] = []
        var position = 0

        public mutating func next() async throws -> RunEvent? {
            if position == taken.count {
                taken = try await run.events(from: index)
                position = 0
                if taken.isEmpty { return nil }
            }
            let e = taken[position]
            position += 1
            index += 1
            return e
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(run: run) }
}

/// The assistant text of a run in chunks (see `Run.text`).
public struct RunText: AsyncSequence, Sendable {
    public typealias Element = String
    let events: RunEvents
    let fromDeltas: Bool

    public struct AsyncIterator: AsyncIteratorProtocol {
        var events: RunEvents.AsyncIterator
        let fromDeltas: Bool

        public mutating func next() async throws -> String? {
            while let e = try await events.next() {
                switch e {
                case .assistant(let text) where !fromDeltas: return text
                case .delta("text-delta", let text?, _) where fromDeltas: return text
                default: continue
                }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(events: events.makeAsyncIterator(), fromDeltas: fromDeltas)
    }
}

/// A run's status changes (see `Run.statusUpdates`).
public struct RunStatusUpdates: AsyncSequence, Sendable {
    public typealias Element = RunStatus
    let events: RunEvents

    public struct AsyncIterator: AsyncIteratorProtocol {
        var events: RunEvents.AsyncIterator

        public mutating func next() async throws -> RunStatus? {
            while let e = try await events.next() {
                if case .status(let s, _) = e { return s }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events.makeAsyncIterator()) }
}
