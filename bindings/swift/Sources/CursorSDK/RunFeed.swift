import CCursorSDK
import Dispatch
import Synchronization

/// What a run has delivered so far and how it ended, shared by its pump (which appends) and its
/// readers (which wait). Readers suspend on continuations, never on a thread.
final class RunFeed: Sendable {
    private struct State {
        var events: [RunEvent] = []
        /// Set once, at the end of the stream.
        var outcome: Result<RunResult, CursorError>?
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waiters whose task was cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        var nextWaiter: UInt64 = 0

        mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
            let all = Array(waiters.values)
            waiters.removeAll()
            return all
        }
    }

    private let state = Mutex(State())

    func append(_ batch: [RunEvent]) {
        if batch.isEmpty { return }
        let wake = state.withLock { s in
            s.events.append(contentsOf: batch)
            return s.takeWaiters()
        }
        wake.forEach { $0.resume() }
    }

    func finish(_ outcome: Result<RunResult, CursorError>) {
        let wake = state.withLock { s in
            if s.outcome == nil { s.outcome = outcome }
            return s.takeWaiters()
        }
        wake.forEach { $0.resume() }
    }

    /// The events from `index` on that have arrived (at most `max`, at least one: waiting for
    /// it); empty after the last one. Throws the stream's failure after the last event, and
    /// `CancellationError` when the waiting task is cancelled.
    func events(from index: Int, max: Int) async throws -> [RunEvent] {
        while true {
            let now: Result<[RunEvent], CursorError>? = state.withLock { s in
                // Copied out: a slice would share the buffer that `append` then copies whole.
                if index < s.events.count { return .success(Array(s.events[index..<min(s.events.count, index + max)])) }
                switch s.outcome {
                case .none: return nil
                case .success: return .success([])
                case .failure(let e): return .failure(e)
                }
            }
            if let now { return try now.get() }
            try await waitForChange { s in index < s.events.count || s.outcome != nil }
        }
    }

    /// The outcome, waiting for the end of the stream.
    func outcome() async throws -> RunResult {
        while true {
            if let done = state.withLock({ $0.outcome }) { return try done.get() }
            try await waitForChange { $0.outcome != nil }
        }
    }

    private func waitForChange(until ready: (borrowing State) -> Bool) async throws {
        try Task.checkCancellation()
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if ready(s) || s.cancelled.remove(id) != nil { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { s in
                let c = s.waiters.removeValue(forKey: id)
                if c == nil { s.cancelled.insert(id) }
                return c
            }
            c?.resume()
        }
        // A cancel that came after a normal wake-up leaves its marker behind.
        state.withLock { _ = $0.cancelled.remove(id) }
        try Task.checkCancellation()
    }
}

/// Reads a run without blocking anyone: a dispatch source watches the run's wake descriptor and,
/// on a private serial queue, drains the ready events with `cursor_run_next_event(run, 0, …)`
/// into the feed. At the end it stores the run's result (`cursor_run_wait(run, 0, …)`).
final class RunPump: Sendable {
    // The run handle and the source are used only on `queue` (one reader at a time, as the C
    // API asks) and in `stop()`, which cancels the source and waits until its handlers are done.
    nonisolated(unsafe) private let raw: OpaquePointer
    nonisolated(unsafe) private let source: any DispatchSourceRead
    private let stopped = DispatchSemaphore(value: 0)
    private let feed: RunFeed
    /// An error the stream reported; the end (`CURSOR_END`) follows it.
    private let failure = Mutex<CursorError?>(nil)
    /// Set by `stop()`: a drain in progress returns at its next event.
    private let stopping = Atomic<Bool>(false)
    /// Events per drain pass: the source fires again while the descriptor stays readable, so a
    /// fast stream never holds the queue (and `stop()`) for long.
    private static let passLimit = 4096

    init(raw: OpaquePointer, feed: RunFeed) throws(CursorError) {
        let fd = cursor_run_wait_fd(raw)
        guard fd >= 0 else {
            throw CursorError(kind: .unsupported, message: "unsupported: the run has no wake descriptor here")
        }
        self.raw = raw
        self.feed = feed
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "cursor-sdk.run"))
        source.setEventHandler { [self] in drain() }
        source.setCancelHandler { [stopped] in stopped.signal() }
        source.activate()
    }

    /// Stops reading; when it returns, no handler runs and none will (the run may be freed).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        source.cancel()
        stopped.wait()
        stopped.signal()  // stop() may be called again (idempotent)
    }

    private func drain() {
        var batch: [RunEvent] = []
        for _ in 0..<Self.passLimit {
            if stopping.load(ordering: .relaxed) { break }
            var ev: OpaquePointer?
            var err: OpaquePointer?
            let st = cursor_run_next_event(raw, 0, &ev, &err)
            switch st {
            case .CURSOR_OK:
                if let ev {
                    batch.append(RunEvent(ev))
                    cursor_event_free(ev)
                }
                if batch.count >= 512 {
                    feed.append(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            case .CURSOR_TIMEOUT:
                feed.append(batch)
                return
            case .CURSOR_END:
                feed.append(batch)
                finish()
                return
            default:
                let e = err.map { CursorError($0) } ?? CursorError(status: st)
                cursor_error_free(err)
                failure.withLock { $0 = $0 ?? e }
            }
        }
        feed.append(batch)
    }

    private func finish() {
        if let e = failure.withLock({ $0 }) {
            feed.finish(.failure(e))
        } else {
            feed.finish(Result { () throws(CursorError) in RunResult(json: try ownedJSON { cursor_run_wait(raw, 0, $0, $1) }) })
        }
        source.cancel()
    }
}
