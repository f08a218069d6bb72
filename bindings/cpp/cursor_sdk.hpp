// cursor_sdk.hpp: a header-only C++17 layer over the cursor_sdk C library (cursor_sdk.h).
//
// It adds RAII and types, nothing else: no threads, no protocol logic, no hidden retries. Every
// guarantee of the C ABI (what blocks and for how long, cancel never blocks, what is freed when;
// bindings/c/README.md, "Guarantees") holds unchanged.
//
// - Client, Agent, Run, Event, ToolCall are move-only and free their handle in the destructor.
//   A moved-from object is safe to destroy; any call on it returns a Status::usage error.
// - Works with -fno-exceptions -fno-rtti: every fallible call returns a [[nodiscard]]
//   cursor::Result<T> (a value or a cursor::Error). With exceptions on, Result::value_or_throw()
//   and Result<void>::throw_if_error() throw cursor::Exception (an Error and a std::exception).
// - Strings go in as std::string_view (copied, NUL-terminated, before the C call; an embedded
//   NUL is Status::invalid_argument). Strings the C API hands over with ownership come out as
//   std::string (freed once, at once); borrowed ones as std::string_view into their handle.
#ifndef CURSOR_SDK_HPP
#define CURSOR_SDK_HPP

#include <cursor_sdk.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef __cpp_exceptions
#include <exception>
// The throwing layer (cursor::Exception, value_or_throw); CURSOR_SDK_NO_EXCEPTIONS leaves it out.
// Handlers are guarded whenever exceptions are on, so none unwinds into C.
#ifndef CURSOR_SDK_NO_EXCEPTIONS
#define CURSOR_SDK_EXCEPTIONS 1
#endif
#endif

namespace cursor {

/// A call's outcome: the C header's cursor_status (values identical; unknown ones pass through).
enum class Status : int32_t {
    ok = CURSOR_OK,
    timeout = CURSOR_TIMEOUT,
    end = CURSOR_END,
    invalid_argument = CURSOR_E_INVALID_ARGUMENT,
    auth = CURSOR_E_AUTH,
    permission_denied = CURSOR_E_PERMISSION_DENIED,
    not_found = CURSOR_E_NOT_FOUND,
    busy = CURSOR_E_BUSY,
    rate_limited = CURSOR_E_RATE_LIMITED,
    unavailable = CURSOR_E_UNAVAILABLE,
    bridge_start_failed = CURSOR_E_BRIDGE_START_FAILED,
    bridge_exited = CURSOR_E_BRIDGE_EXITED,
    transport = CURSOR_E_TRANSPORT,
    deadline = CURSOR_E_DEADLINE,
    protocol = CURSOR_E_PROTOCOL,
    cancelled = CURSOR_E_CANCELLED,
    internal = CURSOR_E_INTERNAL,
    unsupported = CURSOR_E_UNSUPPORTED,
    failed_precondition = CURSOR_E_FAILED_PRECONDITION,
    usage = CURSOR_E_USAGE,
    run_failed = CURSOR_E_RUN_FAILED,
    stale_run = CURSOR_E_STALE_RUN,
};

enum class RunStatus : int {
    invalid = CURSOR_RUN_INVALID,
    running = CURSOR_RUN_RUNNING,
    finished = CURSOR_RUN_FINISHED,
    error = CURSOR_RUN_ERROR,
    cancelled = CURSOR_RUN_CANCELLED,
    expired = CURSOR_RUN_EXPIRED,
};

enum class EventKind : int {
    invalid = CURSOR_EVENT_INVALID,
    message = CURSOR_EVENT_MESSAGE,
    delta = CURSOR_EVENT_DELTA,
    step = CURSOR_EVENT_STEP,
    result = CURSOR_EVENT_RESULT,
};

enum class LogLevel : int32_t {
    error = CURSOR_LOG_ERROR,
    warn = CURSOR_LOG_WARN,
    info = CURSOR_LOG_INFO,
    debug = CURSOR_LOG_DEBUG,
};

/// "ok", "not_found", … (static; "unknown" for values this library does not know).
inline std::string_view status_name(Status s) noexcept { return cursor_status_name(static_cast<int32_t>(s)); }

/// The library's version ("0.1.0"); CURSOR_SDK_VERSION is the header's.
inline std::string_view version() noexcept { return cursor_sdk_version(); }
inline uint32_t version_number() noexcept { return cursor_sdk_version_number(); }
/// Whether the loaded library is the one this header was written for.
inline bool version_matches() noexcept { return cursor_sdk_version_number() == CURSOR_SDK_VERSION_NUMBER; }

namespace detail {
[[noreturn]] inline void misuse(const char *what) noexcept {
    std::fprintf(stderr, "cursor_sdk.hpp: %s\n", what);
    std::abort();
}
inline std::optional<std::string_view> opt(const char *s) noexcept {
    return s ? std::optional<std::string_view>(s) : std::nullopt;
}
inline std::string_view view(const char *s) noexcept { return s ? std::string_view(s) : std::string_view(); }
/// Runs a user callback that must not unwind into C: with exceptions on, one escaping is dropped.
template <class F>
void guarded(F &&f) noexcept {
#ifdef __cpp_exceptions
    try {
        f();
    } catch (...) {
    }
#else
    f();
#endif
}
struct ErrorFree {
    void operator()(cursor_error *e) const noexcept { cursor_error_free(e); }
};
} // namespace detail

/// Rate-limit details of an Error; each value is absent when the bridge did not send it.
struct RateLimit {
    std::optional<uint64_t> limit, remaining, reset_epoch_seconds;
};

/// A failed call: its kind and every detail the C error object carries. Copies share the one C
/// error object (freed with the last copy), so its string views live as long as any copy.
class Error {
public:
    /// Takes ownership of `e` (which may be NULL: then `kind` and a generic message are used).
    Error(Status kind, cursor_error *e) : kind_(kind) {
        if (e) raw_.reset(e, detail::ErrorFree{});
    }
    /// An error made by this binding (no C error object); `message` must be a static string.
    Error(Status kind, const char *static_message) noexcept : kind_(kind), note_(static_message) {}
    /// An error carrying a copy of `message` (no C error object).
    Error(Status kind, std::string message) : kind_(kind), copy_(std::make_shared<const std::string>(std::move(message))) {}

    Status kind() const noexcept { return kind_; }
    /// "<kind>: <text>" (plus the request id when there is one). NUL-terminated.
    std::string_view message() const noexcept {
        if (raw_) return cursor_error_message(raw_.get());
        if (copy_) return *copy_;
        return note_ ? note_ : cursor_status_name(static_cast<int32_t>(kind_));
    }
    std::optional<std::string_view> connect_code() const noexcept { return raw_ ? detail::opt(cursor_error_connect_code(raw_.get())) : std::nullopt; }
    int32_t sdk_code() const noexcept { return raw_ ? cursor_error_sdk_code(raw_.get()) : 0; }
    std::optional<std::string_view> request_id() const noexcept { return raw_ ? detail::opt(cursor_error_request_id(raw_.get())) : std::nullopt; }
    std::optional<std::chrono::milliseconds> retry_after() const noexcept {
        int64_t ms = raw_ ? cursor_error_retry_after_ms(raw_.get()) : -1;
        return ms < 0 ? std::nullopt : std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(ms));
    }
    std::optional<RateLimit> rate_limit() const noexcept {
        uint64_t l = 0, r = 0, t = 0;
        if (!raw_ || !cursor_error_rate_limit(raw_.get(), &l, &r, &t)) return std::nullopt;
        auto known = [](uint64_t v) { return v == UINT64_MAX ? std::nullopt : std::optional<uint64_t>(v); };
        return RateLimit{known(l), known(r), known(t)};
    }
    std::optional<std::string_view> help_url() const noexcept { return raw_ ? detail::opt(cursor_error_help_url(raw_.get())) : std::nullopt; }
    std::optional<std::string_view> provider() const noexcept { return raw_ ? detail::opt(cursor_error_provider(raw_.get())) : std::nullopt; }
    /// The run the error is about (Status::stale_run: pass it to Client::cancel_run).
    std::optional<std::string_view> run_id() const noexcept { return raw_ ? detail::opt(cursor_error_run_id(raw_.get())) : std::nullopt; }
    int32_t http_status() const noexcept { return raw_ ? cursor_error_http_status(raw_.get()) : 0; }
    bool retryable() const noexcept { return raw_ && cursor_error_retryable(raw_.get()); }
    /// The C error object (NULL for errors made by this binding); owned by this Error.
    const cursor_error *raw() const noexcept { return raw_.get(); }

private:
    // "No error" (kind ok), for the holders below: gcc 12 reports false maybe-uninitialized
    // warnings for std::optional<Error>, which would break users' -Werror builds.
    Error() noexcept : kind_(Status::ok) {}
    friend class Run;
    template <class>
    friend class Result;

    Status kind_;
    std::shared_ptr<cursor_error> raw_;
    std::shared_ptr<const std::string> copy_;
    const char *note_ = nullptr;
};

#ifdef CURSOR_SDK_EXCEPTIONS
/// What the throwing layer throws: the Error, catchable as std::exception too.
class Exception : public std::exception, public Error {
public:
    explicit Exception(Error e) noexcept : Error(std::move(e)) {}
    const char *what() const noexcept override { return message().data(); }
};
#endif

/// A value or an Error. Check it (`if (r)`, `r.ok()`) before `value()`/`*r`: reading the value
/// of an error (or the error of a value) is a bug and aborts with a message.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : ok_(true) { new (&value_) T(std::move(value)); }
    Result(Error error) : ok_(false) { new (&error_) Error(std::move(error)); }
    Result(Result &&o) noexcept(std::is_nothrow_move_constructible_v<T>) : ok_(o.ok_) {
        if (ok_) new (&value_) T(std::move(o.value_));
        else new (&error_) Error(std::move(o.error_));
    }
    Result(const Result &o) : ok_(o.ok_) {
        if (ok_) new (&value_) T(o.value_);
        else new (&error_) Error(o.error_);
    }
    Result &operator=(Result o) noexcept(std::is_nothrow_move_constructible_v<T>) {
        destroy();
        ok_ = o.ok_;
        if (ok_) new (&value_) T(std::move(o.value_));
        else new (&error_) Error(std::move(o.error_));
        return *this;
    }
    ~Result() { destroy(); }

    bool ok() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }

    T &value() & { return check(), value_; }
    const T &value() const & { return check(), value_; }
    T &&value() && { return check(), std::move(value_); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T &&operator*() && { return std::move(value()); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    /// The value, or `fallback` on an error.
    T value_or(T fallback) && { return ok_ ? std::move(value_) : std::move(fallback); }

    const Error &error() const & {
        if (ok_) detail::misuse("Result::error() on a value");
        return error_;
    }
    Error error() && {
        if (ok_) detail::misuse("Result::error() on a value");
        return std::move(error_);
    }

#ifdef CURSOR_SDK_EXCEPTIONS
    /// The value, or throws cursor::Exception.
    T value_or_throw() && {
        if (!ok_) throw Exception(error_);
        return std::move(value_);
    }
#endif

private:
    void check() const {
        if (!ok_) {
            std::fprintf(stderr, "cursor_sdk.hpp: Result::value() on an error: %.*s\n",
                         static_cast<int>(error_.message().size()), error_.message().data());
            std::abort();
        }
    }
    void destroy() noexcept {
        if (ok_) value_.~T();
        else error_.~Error();
    }
    bool ok_;
    union {
        T value_;
        Error error_;
    };
};

/// Success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() noexcept = default;
    Result(Error error) : error_(std::move(error)) {}
    bool ok() const noexcept { return error_.kind() == Status::ok; }
    explicit operator bool() const noexcept { return ok(); }
    const Error &error() const & {
        if (ok()) detail::misuse("Result<void>::error() on success");
        return error_;
    }
    Error error() && {
        if (ok()) detail::misuse("Result<void>::error() on success");
        return std::move(error_);
    }
#ifdef CURSOR_SDK_EXCEPTIONS
    /// Throws cursor::Exception on an error.
    void throw_if_error() const {
        if (!ok()) throw Exception(error_);
    }
#endif

private:
    Error error_; // kind ok: success
};

namespace detail {
/// A NUL-terminated copy of a string_view for the C API. Small strings stay on the stack.
class CStr {
public:
    explicit CStr(std::string_view s) : size_(s.size()) {
        if (s.size() < sizeof small_) {
            s.copy(small_, s.size());
            small_[s.size()] = '\0';
        } else {
            big_.assign(s.data(), s.size());
        }
        nul_ = s.find('\0') != std::string_view::npos;
    }
    const char *get() const noexcept { return size_ < sizeof small_ ? small_ : big_.c_str(); }
    bool has_nul() const noexcept { return nul_; }

private:
    char small_[128];
    std::string big_;
    size_t size_;
    bool nul_ = false;
};

/// An optional string argument: absent (NULL) or a CStr.
class OptCStr {
public:
    OptCStr(std::optional<std::string_view> s) {
        if (s) s_.emplace(*s);
    }
    const char *get() const noexcept { return s_ ? s_->get() : nullptr; }
    bool has_nul() const noexcept { return s_ && s_->has_nul(); }

private:
    std::optional<CStr> s_;
};

inline Error from_status(cursor_status st, cursor_error *e) { return Error(static_cast<Status>(st), e); }
inline Error nul_error() { return Error(Status::invalid_argument, "invalid_argument: a string argument contains a NUL byte"); }
inline Error moved(const char *message) { return Error(Status::usage, message); }

/// Takes an owned C string and returns it as std::string (freed here, exactly once).
inline std::string take(char *s) {
    std::string out = s ? std::string(s) : std::string();
    cursor_string_free(s);
    return out;
}

/// Runs `call(err)` returning a cursor_status; maps it to Result<void>.
template <class F>
Result<void> unit(F &&call) {
    cursor_error *err = nullptr;
    cursor_status st = call(&err);
    if (st == CURSOR_OK) return {};
    return from_status(st, err);
}

/// Runs `call(&out, &err)` for an owned `char *` result; maps it to Result<std::string>.
template <class F>
Result<std::string> text(F &&call) {
    char *out = nullptr;
    cursor_error *err = nullptr;
    cursor_status st = call(&out, &err);
    if (st == CURSOR_OK) return take(out);
    cursor_string_free(out);
    return from_status(st, err);
}

template <class... S>
bool any_nul(const S &...s) noexcept {
    return (s.has_nul() || ...);
}

constexpr const char *kClientMoved = "usage: cursor::Client used after it was moved from";
constexpr const char *kAgentMoved = "usage: cursor::Agent used after it was moved from";
constexpr const char *kRunMoved = "usage: cursor::Run used after it was moved from";
constexpr const char *kToolCallMoved = "usage: cursor::ToolCall used after it was moved from";
} // namespace detail

/// JSON string literal for `s` (quotes and escapes added): for building option JSON.
inline std::string json_quote(std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char ch : s) {
        unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    out += '"';
    return out;
}

namespace detail {
/// Read access shared by Event (owning) and EventView (borrowed).
template <class D>
class EventAccess {
public:
    EventKind kind() const noexcept { return static_cast<EventKind>(cursor_event_kind(ptr())); }
    /// "assistant", "status", "tool_call", "text-delta", "result", … ("" for no event).
    std::string_view type() const noexcept { return ptr() ? view(cursor_event_type(ptr())) : std::string_view(); }
    /// The payload as JSON (built on first use).
    std::string_view json() const noexcept { return ptr() ? view(cursor_event_json(ptr())) : std::string_view(); }
    /// The assistant text this event carries (an "assistant" message or a "text-delta").
    std::optional<std::string_view> text() const noexcept { return ptr() ? opt(cursor_event_text(ptr())) : std::nullopt; }
    /// The resume offset (for Run::observe).
    std::optional<std::string_view> offset() const noexcept { return ptr() ? opt(cursor_event_offset(ptr())) : std::nullopt; }

private:
    const cursor_event *ptr() const noexcept { return static_cast<const D *>(this)->raw(); }
};
} // namespace detail

/// A borrowed event (push mode): valid during the callback only.
class EventView : public detail::EventAccess<EventView> {
public:
    explicit EventView(const cursor_event *e) noexcept : e_(e) {}
    const cursor_event *raw() const noexcept { return e_; }

private:
    const cursor_event *e_;
};

/// One event of a run; its string views live as long as it does.
class Event : public detail::EventAccess<Event> {
public:
    Event() noexcept = default;
    explicit Event(cursor_event *e) noexcept : e_(e) {}
    Event(Event &&o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    Event &operator=(Event &&o) noexcept {
        if (this != &o) {
            cursor_event_free(e_);
            e_ = std::exchange(o.e_, nullptr);
        }
        return *this;
    }
    Event(const Event &) = delete;
    Event &operator=(const Event &) = delete;
    ~Event() { cursor_event_free(e_); }

    explicit operator bool() const noexcept { return e_ != nullptr; }
    const cursor_event *raw() const noexcept { return e_; }
    EventView view() const noexcept { return EventView(e_); }
    /// Gives up ownership (free it with cursor_event_free).
    cursor_event *release() noexcept { return std::exchange(e_, nullptr); }

private:
    cursor_event *e_ = nullptr;
};

/// What Run::poll / Run::next_for found: an event, nothing yet (pending), or the end.
class Polled {
public:
    enum class State { event, pending, end };
    static Polled pending() noexcept { return Polled(State::pending, Event()); }
    static Polled end() noexcept { return Polled(State::end, Event()); }
    static Polled of(Event e) noexcept { return Polled(State::event, std::move(e)); }

    State state() const noexcept { return state_; }
    bool is_event() const noexcept { return state_ == State::event; }
    bool is_pending() const noexcept { return state_ == State::pending; }
    bool is_end() const noexcept { return state_ == State::end; }
    /// The event (state event only).
    Event &event() noexcept {
        if (state_ != State::event) detail::misuse("Polled::event() without an event");
        return event_;
    }

private:
    Polled(State s, Event e) noexcept : state_(s), event_(std::move(e)) {}
    State state_;
    Event event_;
};

/// A run: its events (blocking, polling, a descriptor for event loops, or push), its result
/// and cancel. Consume it from one thread at a time; cancel(), status() and id() are safe from
/// any thread.
class Run {
public:
    Run() noexcept = default;
    explicit Run(cursor_run *r) noexcept : r_(r) {}
    Run(Run &&o) noexcept : r_(std::exchange(o.r_, nullptr)), error_(std::move(o.error_)) {}
    Run &operator=(Run &&o) noexcept {
        if (this != &o) {
            cursor_run_free(r_);
            r_ = std::exchange(o.r_, nullptr);
            error_ = std::move(o.error_);
        }
        return *this;
    }
    Run(const Run &) = delete;
    Run &operator=(const Run &) = delete;
    /// Stops reading (never waits for the network); does not cancel the run in the bridge.
    ~Run() { cursor_run_free(r_); }

    explicit operator bool() const noexcept { return r_ != nullptr; }
    cursor_run *raw() const noexcept { return r_; }
    cursor_run *release() noexcept { return std::exchange(r_, nullptr); }

    /// The run id ("" until the bridge named it, or for a moved-from run).
    std::string_view id() const noexcept { return r_ ? detail::view(cursor_run_id(r_)) : std::string_view(); }
    RunStatus status() const noexcept { return static_cast<RunStatus>(cursor_run_status(r_)); }

    /// The next event, blocking as long as it takes (bounded by the library's stream
    /// guarantees); std::nullopt at the end. An error of the stream is returned once.
    Result<std::optional<Event>> next() {
        Result<Polled> p = next_for(-1);
        if (!p) return p.error();
        if (p->is_end()) return std::optional<Event>();
        return std::optional<Event>(std::move(p->event()));
    }
    /// The next event within `timeout_ms` (0 never blocks): pending when none came in time.
    Result<Polled> next_for(int32_t timeout_ms) {
        if (!r_) return detail::moved(detail::kRunMoved);
        cursor_event *ev = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_run_next_event(r_, timeout_ms, &ev, &err);
        switch (st) {
        case CURSOR_OK: return Polled::of(Event(ev));
        case CURSOR_TIMEOUT: return Polled::pending();
        case CURSOR_END: return Polled::end();
        default: return detail::from_status(st, err);
        }
    }
    Result<Polled> next_for(std::chrono::milliseconds timeout) { return next_for(clamp(timeout)); }
    /// Never blocks: an event, pending (which re-arms fd()), or the end.
    Result<Polled> poll() { return next_for(0); }

    /// A descriptor readable when the run has events or ended (for poll/epoll/kqueue); owned by
    /// the run. -1 where unsupported (Windows) or for a moved-from run.
    int fd() const noexcept { return r_ ? cursor_run_wait_fd(r_) : -1; }

    /// Waits for the end (consuming the remaining events) and gives the result JSON
    /// (`status`: "finished", "error", "cancelled" or "expired": a failed run is not an Error).
    Result<std::string> wait() {
        Result<std::optional<std::string>> r = wait_for(-1);
        if (!r) return r.error();
        return std::move(**r);
    }
    /// As wait(), within `timeout_ms`: std::nullopt when it passed first (the run goes on).
    Result<std::optional<std::string>> wait_for(int32_t timeout_ms) {
        if (!r_) return detail::moved(detail::kRunMoved);
        char *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_run_wait(r_, timeout_ms, &out, &err);
        if (st == CURSOR_OK) return std::optional<std::string>(detail::take(out));
        cursor_string_free(out);
        if (st == CURSOR_TIMEOUT) return std::optional<std::string>();
        return detail::from_status(st, err);
    }
    Result<std::optional<std::string>> wait_for(std::chrono::milliseconds timeout) { return wait_for(clamp(timeout)); }

    /// Never blocks; from any thread; idempotent. The stream then ends with status cancelled.
    Result<void> cancel() {
        if (!r_) return detail::moved(detail::kRunMoved);
        return detail::unit([&](cursor_error **e) { return cursor_run_cancel(r_, e); });
    }
    /// The assistant text so far (the final text once the run ended).
    Result<std::string> text() {
        if (!r_) return detail::moved(detail::kRunMoved);
        return detail::text([&](char **o, cursor_error **e) { return cursor_run_text(r_, o, e); });
    }
    /// A new run handle on the durable stream after `after_offset` (absent: from the start).
    Result<Run> observe(std::optional<std::string_view> after_offset = std::nullopt) {
        if (!r_) return detail::moved(detail::kRunMoved);
        detail::OptCStr off(after_offset);
        if (off.has_nul()) return detail::nul_error();
        cursor_run *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_run_observe(r_, off.get(), &out, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        return Run(out);
    }

    /// Push mode: `on_event` is called on a library thread for each event (borrowed for the
    /// call), then `on_end` once with the stream's failure (nullptr when it ended normally; its
    /// kind and message are copied, the other details of the borrowed C error are not). An
    /// exception escaping either is dropped. Do not read the run otherwise afterwards.
    Result<void> on_events(std::function<void(EventView)> on_event, std::function<void(const Error *)> on_end) {
        if (!r_) return detail::moved(detail::kRunMoved);
        auto *push = new Push{std::move(on_event), std::move(on_end)};
        cursor_error *err = nullptr;
        cursor_status st = cursor_run_set_callback(r_, &Push::call, push, &err);
        if (st == CURSOR_OK) return {};
        delete push;
        return detail::from_status(st, err);
    }

    /// The stream's error that ended the last range-for loop (begin()/end()), or nullptr.
    const Error *stream_error() const noexcept { return error_.kind() == Status::ok ? nullptr : &error_; }

    /// Range-for over the remaining events (blocking next()). The loop ends at the end of the
    /// stream or at an error, which stream_error() then holds.
    class iterator {
    public:
        using value_type = Event;
        using reference = Event &;
        using pointer = Event *;
        using difference_type = std::ptrdiff_t;
        using iterator_category = std::input_iterator_tag;
        iterator() noexcept = default;
        explicit iterator(Run *run) : run_(run) { advance(); }
        Event &operator*() noexcept { return event_; }
        Event *operator->() noexcept { return &event_; }
        iterator &operator++() {
            advance();
            return *this;
        }
        bool operator==(const iterator &o) const noexcept { return run_ == o.run_; }
        bool operator!=(const iterator &o) const noexcept { return run_ != o.run_; }

    private:
        void advance() {
            Result<std::optional<Event>> r = run_->next();
            if (r && *r) {
                event_ = std::move(**r);
                return;
            }
            event_ = Event();
            if (!r) run_->error_ = r.error();
            run_ = nullptr;
        }
        Run *run_ = nullptr;
        Event event_;
    };
    iterator begin() {
        if (!r_) {
            error_ = detail::moved(detail::kRunMoved);
            return iterator();
        }
        error_ = Error();
        return iterator(this);
    }
    iterator end() noexcept { return iterator(); }

private:
    struct Push {
        std::function<void(EventView)> on_event;
        std::function<void(const Error *)> on_end;
        static void call(void *ud, const cursor_event *ev, const cursor_error *err) {
            auto *p = static_cast<Push *>(ud);
            if (ev) {
                detail::guarded([&] {
                    if (p->on_event) p->on_event(EventView(ev));
                });
                return;
            }
            detail::guarded([&] {
                if (!p->on_end) return;
                if (!err) return p->on_end(nullptr);
                // The C error is borrowed for this call only: copy what the Error keeps.
                Error e(static_cast<Status>(cursor_error_kind(err)), std::string(cursor_error_message(err)));
                p->on_end(&e);
            });
            delete p;
        }
    };
    static int32_t clamp(std::chrono::milliseconds t) noexcept {
        if (t.count() < 0) return -1;
        return t.count() > INT32_MAX ? INT32_MAX : static_cast<int32_t>(t.count());
    }
    cursor_run *r_ = nullptr;
    Error error_; // kind ok: none
};

/// An agent: sends messages (each gives a Run) and manages itself. Thread-safe; free it (let it
/// go out of scope) before its Client.
class Agent {
public:
    Agent() noexcept = default;
    explicit Agent(cursor_agent *a) noexcept : a_(a) {}
    Agent(Agent &&o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
    Agent &operator=(Agent &&o) noexcept {
        if (this != &o) {
            cursor_agent_free(a_);
            a_ = std::exchange(o.a_, nullptr);
        }
        return *this;
    }
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;
    ~Agent() { cursor_agent_free(a_); }

    explicit operator bool() const noexcept { return a_ != nullptr; }
    cursor_agent *raw() const noexcept { return a_; }
    cursor_agent *release() noexcept { return std::exchange(a_, nullptr); }
    std::string_view id() const noexcept { return a_ ? detail::view(cursor_agent_id(a_)) : std::string_view(); }

    /// Sends `message` (plain text, or a UserMessage JSON object) with optional send options
    /// JSON (`{"enableDeltas":true}`, `{"model":…}`, …); returns once the stream is open.
    Result<Run> send(std::string_view message, std::optional<std::string_view> options_json = std::nullopt) {
        if (!a_) return detail::moved(detail::kAgentMoved);
        detail::CStr msg(message);
        detail::OptCStr opts(options_json);
        if (detail::any_nul(msg, opts)) return detail::nul_error();
        cursor_run *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_agent_send(a_, msg.get(), opts.get(), &out, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        return Run(out);
    }

    Result<void> close() { return simple(cursor_agent_close); }
    Result<void> reload() { return simple(cursor_agent_reload); }
    Result<void> archive() { return simple(cursor_agent_archive); }
    Result<void> unarchive() { return simple(cursor_agent_unarchive); }
    /// Deletes the agent and its durable data (`delete` is a keyword).
    Result<void> remove() { return simple(cursor_agent_delete); }

    /// SdkAgentInfo JSON.
    Result<std::string> info() {
        if (!a_) return detail::moved(detail::kAgentMoved);
        return detail::text([&](char **o, cursor_error **e) { return cursor_agent_info(a_, o, e); });
    }
    /// A JSON array of AgentMessage; options: limit, offset, runtime, cwd, apiKey.
    Result<std::string> messages(std::optional<std::string_view> options_json = std::nullopt) {
        if (!a_) return detail::moved(detail::kAgentMoved);
        detail::OptCStr opts(options_json);
        if (opts.has_nul()) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return cursor_agent_messages(a_, opts.get(), o, e); });
    }
    /// A JSON array of {path,sizeBytes,updatedAt}.
    Result<std::string> artifacts() {
        if (!a_) return detail::moved(detail::kAgentMoved);
        return detail::text([&](char **o, cursor_error **e) { return cursor_agent_artifacts(a_, o, e); });
    }
    /// AgentUsage JSON, for one run when `run_id` is given.
    Result<std::string> usage(std::optional<std::string_view> run_id = std::nullopt) {
        if (!a_) return detail::moved(detail::kAgentMoved);
        detail::OptCStr id(run_id);
        if (id.has_nul()) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return cursor_agent_usage(a_, id.get(), o, e); });
    }
    Result<std::vector<uint8_t>> download_artifact(std::string_view path) {
        if (!a_) return detail::moved(detail::kAgentMoved);
        detail::CStr p(path);
        if (p.has_nul()) return detail::nul_error();
        uint8_t *data = nullptr;
        size_t len = 0;
        cursor_error *err = nullptr;
        cursor_status st = cursor_agent_download_artifact(a_, p.get(), &data, &len, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        std::vector<uint8_t> out(data, data + len);
        cursor_bytes_free(data, len);
        return Result<std::vector<uint8_t>>(std::move(out));
    }

private:
    Result<void> simple(cursor_status (*fn)(cursor_agent *, cursor_error **)) {
        if (!a_) return detail::moved(detail::kAgentMoved);
        return detail::unit([&](cursor_error **e) { return fn(a_, e); });
    }
    cursor_agent *a_ = nullptr;
};

/// One call of a custom tool. Owned by the handler it is given to: answer it with complete() or
/// fail(), now or later from any thread (move it there). Destroyed unanswered, the model gets
/// an error ("dropped without an answer").
class ToolCall {
public:
    explicit ToolCall(cursor_tool_call *c) noexcept : c_(c) {}
    ToolCall(ToolCall &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    ToolCall &operator=(ToolCall &&o) noexcept {
        if (this != &o) {
            cursor_tool_call_free(c_);
            c_ = std::exchange(o.c_, nullptr);
        }
        return *this;
    }
    ToolCall(const ToolCall &) = delete;
    ToolCall &operator=(const ToolCall &) = delete;
    ~ToolCall() { cursor_tool_call_free(c_); }

    explicit operator bool() const noexcept { return c_ != nullptr; }
    cursor_tool_call *raw() const noexcept { return c_; }
    std::string_view name() const noexcept { return c_ ? detail::view(cursor_tool_call_name(c_)) : std::string_view(); }
    /// The arguments, a JSON object.
    std::string_view args_json() const noexcept { return c_ ? detail::view(cursor_tool_call_args_json(c_)) : std::string_view(); }
    std::optional<std::string_view> id() const noexcept { return c_ ? detail::opt(cursor_tool_call_id(c_)) : std::nullopt; }
    std::string_view agent_id() const noexcept { return c_ ? detail::view(cursor_tool_call_agent_id(c_)) : std::string_view(); }

    /// Answers with any JSON value (an object passes through, others become text). Once.
    Result<void> complete(std::string_view result_json) {
        if (!c_) return detail::moved(detail::kToolCallMoved);
        detail::CStr j(result_json);
        if (j.has_nul()) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return cursor_tool_call_complete(c_, j.get(), e); });
    }
    /// Answers with an error the model sees (the run goes on). Once.
    Result<void> fail(std::string_view message) {
        if (!c_) return detail::moved(detail::kToolCallMoved);
        detail::CStr m(message);
        if (m.has_nul()) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return cursor_tool_call_fail(c_, m.get(), e); });
    }

private:
    cursor_tool_call *c_;
};

/// One store operation, valid during the store handler only: reply once with ok() or fail().
class StoreCall {
public:
    StoreCall(const char *substore, const char *method, const char *input, cursor_store_reply *reply) noexcept
        : substore_(substore), method_(method), input_(input), reply_(reply) {}
    /// "agents", "runs", "runEvents" or "checkpoints".
    std::string_view substore() const noexcept { return substore_; }
    /// "get", "create", "update", "delete", "list" or "append".
    std::string_view method() const noexcept { return method_; }
    std::string_view input_json() const noexcept { return input_; }
    /// Replies with output JSON, or std::nullopt for a null result (a miss, a delete).
    Result<void> ok(std::optional<std::string_view> output_json) {
        detail::OptCStr j(output_json);
        if (j.has_nul()) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return cursor_store_reply_ok(reply_, j.get(), e); });
    }
    Result<void> fail(std::string_view message) {
        detail::CStr m(message);
        if (m.has_nul()) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return cursor_store_reply_error(reply_, m.get(), e); });
    }

private:
    const char *substore_, *method_, *input_;
    cursor_store_reply *reply_;
};

/// A tool handler: gets the call by rvalue; take it (`ToolCall call` parameter, or move it
/// elsewhere) to answer later. Called on library threads, possibly concurrently.
using ToolHandler = std::function<void(ToolCall &&)>;
/// A store handler: reply through the StoreCall before returning. Called on library threads.
using StoreHandler = std::function<void(StoreCall &)>;

namespace detail {
inline void tool_trampoline(void *ud, cursor_tool_call *raw) {
    ToolCall call(raw);
#ifdef __cpp_exceptions
    try {
        (*static_cast<ToolHandler *>(ud))(std::move(call));
    } catch (const std::exception &e) {
        if (call) (void)call.fail(e.what());
    } catch (...) {
        if (call) (void)call.fail("the tool handler threw");
    }
#else
    (*static_cast<ToolHandler *>(ud))(std::move(call));
#endif
}
inline void store_trampoline(void *ud, const char *substore, const char *method, const char *input, cursor_store_reply *reply) {
    StoreCall call(substore, method, input, reply);
#ifdef __cpp_exceptions
    try {
        (*static_cast<StoreHandler *>(ud))(call);
    } catch (const std::exception &e) {
        (void)call.fail(e.what());
    } catch (...) {
        (void)call.fail("the store handler threw");
    }
#else
    (*static_cast<StoreHandler *>(ud))(call);
#endif
}
template <class F>
void delete_as(void *p) {
    delete static_cast<F *>(p);
}
} // namespace detail

/// A client: owns (or attaches to) one bridge, stopped when the client is destroyed. Every
/// method may be called from many threads at once.
class Client {
public:
    /// `options_json`: the C API's client options (`{"workspace":…,"apiKey":…}`); absent for
    /// the defaults (bridge found automatically, CURSOR_API_KEY, the current directory).
    static Result<Client> create(std::optional<std::string_view> options_json = std::nullopt) {
        detail::OptCStr opts(options_json);
        if (opts.has_nul()) return detail::nul_error();
        cursor_client *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_client_new(opts.get(), &out, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        return Client(out);
    }
    /// A client whose bridge keeps every local agent record in `store` (released before the
    /// client's destructor returns).
    static Result<Client> create_with_store(std::optional<std::string_view> options_json, StoreHandler store) {
        detail::OptCStr opts(options_json);
        if (opts.has_nul()) return detail::nul_error();
        if (!store) return Error(Status::invalid_argument, "invalid_argument: an empty store handler");
        auto *h = new StoreHandler(std::move(store));
        cursor_client *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_client_new_with_store(opts.get(), &detail::store_trampoline, h,
                                                        &detail::delete_as<StoreHandler>, &out, &err);
        if (st != CURSOR_OK) {
            delete h; // not called on failure
            return detail::from_status(st, err);
        }
        return Client(out);
    }

    Client() noexcept = default;
    explicit Client(cursor_client *c) noexcept : c_(c) {}
    Client(Client &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    Client &operator=(Client &&o) noexcept {
        if (this != &o) {
            cursor_client_free(c_);
            c_ = std::exchange(o.c_, nullptr);
        }
        return *this;
    }
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;
    /// Stops the bridge it launched; by then no tool or store handler runs and each is released.
    ~Client() { cursor_client_free(c_); }

    explicit operator bool() const noexcept { return c_ != nullptr; }
    cursor_client *raw() const noexcept { return c_; }
    cursor_client *release() noexcept { return std::exchange(c_, nullptr); }

    /// Starts the bridge now (otherwise the first call does).
    Result<void> start() {
        if (!c_) return detail::moved(detail::kClientMoved);
        return detail::unit([&](cursor_error **e) { return cursor_client_start(c_, e); });
    }
    Result<void> ping() {
        if (!c_) return detail::moved(detail::kClientMoved);
        return detail::unit([&](cursor_error **e) { return cursor_client_ping(c_, e); });
    }
    /// `{"bridgeVersion","protocolVersion","capabilities","sdkVersion"}`.
    Result<std::string> bridge_version() {
        if (!c_) return detail::moved(detail::kClientMoved);
        return detail::text([&](char **o, cursor_error **e) { return cursor_client_version(c_, o, e); });
    }
    /// Stops a launched bridge now; later calls fail with Status::usage.
    void shutdown() noexcept {
        if (c_) cursor_client_shutdown(c_);
    }

    Result<Agent> create_agent(std::optional<std::string_view> options_json = std::nullopt) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::OptCStr opts(options_json);
        if (opts.has_nul()) return detail::nul_error();
        cursor_agent *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_agent_create(c_, opts.get(), &out, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        return Agent(out);
    }
    Result<Agent> resume_agent(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::CStr id(agent_id);
        detail::OptCStr opts(options_json);
        if (detail::any_nul(id, opts)) return detail::nul_error();
        cursor_agent *out = nullptr;
        cursor_error *err = nullptr;
        cursor_status st = cursor_agent_resume(c_, id.get(), opts.get(), &out, &err);
        if (st != CURSOR_OK) return detail::from_status(st, err);
        return Agent(out);
    }

    /// Catalog (needs the Cursor backend); `api_key` absent: the client's.
    Result<std::string> me(std::optional<std::string_view> api_key = std::nullopt) { return catalog(cursor_client_me, api_key); }
    Result<std::string> models(std::optional<std::string_view> api_key = std::nullopt) { return catalog(cursor_client_models, api_key); }
    Result<std::string> repositories(std::optional<std::string_view> api_key = std::nullopt) {
        return catalog(cursor_client_repositories, api_key);
    }

    /// Management by id (JSON results; options JSON as in the C header).
    Result<std::string> get_agent(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id_text(cursor_client_get_agent, agent_id, options_json);
    }
    Result<std::string> list_agents(std::optional<std::string_view> options_json = std::nullopt) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::OptCStr opts(options_json);
        if (opts.has_nul()) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return cursor_client_list_agents(c_, opts.get(), o, e); });
    }
    Result<void> archive_agent(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id(cursor_client_archive_agent, agent_id, options_json);
    }
    Result<void> unarchive_agent(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id(cursor_client_unarchive_agent, agent_id, options_json);
    }
    Result<void> delete_agent(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id(cursor_client_delete_agent, agent_id, options_json);
    }
    Result<std::string> list_runs(std::string_view agent_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id_text(cursor_client_list_runs, agent_id, options_json);
    }
    Result<std::string> get_run(std::string_view run_id, std::optional<std::string_view> options_json = std::nullopt) {
        return by_id_text(cursor_client_get_run, run_id, options_json);
    }
    /// Cancels a run by id (runs without a handle here, stale runs).
    Result<void> cancel_run(std::string_view agent_id, std::string_view run_id,
                            std::optional<std::string_view> options_json = std::nullopt) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::CStr a(agent_id), r(run_id);
        detail::OptCStr opts(options_json);
        if (detail::any_nul(a, r, opts)) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return cursor_client_cancel_run(c_, a.get(), r.get(), opts.get(), e); });
    }
    Result<std::string> run_conversation(std::string_view run_id) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::CStr r(run_id);
        if (r.has_nul()) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return cursor_client_run_conversation(c_, r.get(), o, e); });
    }

    /// Registers a tool for the local agents created or resumed from now on. `handler` is kept
    /// until it can no longer be called (at the latest, the client's destruction).
    Result<void> add_tool(std::string_view name, std::optional<std::string_view> description,
                          std::optional<std::string_view> input_schema_json, ToolHandler handler) {
        if (!c_) return detail::moved(detail::kClientMoved);
        if (!handler) return Error(Status::invalid_argument, "invalid_argument: an empty tool handler");
        detail::CStr n(name);
        detail::OptCStr d(description), s(input_schema_json);
        if (detail::any_nul(n, d, s)) return detail::nul_error();
        auto *h = new ToolHandler(std::move(handler));
        cursor_error *err = nullptr;
        cursor_status st = cursor_client_add_tool(c_, n.get(), d.get(), s.get(), &detail::tool_trampoline, h,
                                                  &detail::delete_as<ToolHandler>, &err);
        if (st == CURSOR_OK) return {};
        delete h; // not called on failure
        return detail::from_status(st, err);
    }

private:
    using CatalogFn = cursor_status (*)(cursor_client *, const char *, char **, cursor_error **);
    using ByIdFn = cursor_status (*)(cursor_client *, const char *, const char *, cursor_error **);
    using ByIdTextFn = cursor_status (*)(cursor_client *, const char *, const char *, char **, cursor_error **);
    Result<std::string> catalog(CatalogFn fn, std::optional<std::string_view> api_key) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::OptCStr k(api_key);
        if (k.has_nul()) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return fn(c_, k.get(), o, e); });
    }
    Result<void> by_id(ByIdFn fn, std::string_view id, std::optional<std::string_view> options_json) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::CStr i(id);
        detail::OptCStr opts(options_json);
        if (detail::any_nul(i, opts)) return detail::nul_error();
        return detail::unit([&](cursor_error **e) { return fn(c_, i.get(), opts.get(), e); });
    }
    Result<std::string> by_id_text(ByIdTextFn fn, std::string_view id, std::optional<std::string_view> options_json) {
        if (!c_) return detail::moved(detail::kClientMoved);
        detail::CStr i(id);
        detail::OptCStr opts(options_json);
        if (detail::any_nul(i, opts)) return detail::nul_error();
        return detail::text([&](char **o, cursor_error **e) { return fn(c_, i.get(), opts.get(), o, e); });
    }
    cursor_client *c_ = nullptr;
};

/// One-shot: a process-wide default client creates an agent, sends `prompt`, waits and closes
/// the agent. A run that failed is Status::run_failed (cancelled: Status::cancelled).
inline Result<std::string> prompt(std::string_view prompt, std::optional<std::string_view> agent_options_json = std::nullopt) {
    detail::CStr p(prompt);
    detail::OptCStr opts(agent_options_json);
    if (detail::any_nul(p, opts)) return detail::nul_error();
    return detail::text([&](char **o, cursor_error **e) { return cursor_prompt(p.get(), opts.get(), o, e); });
}

/// A log handler: called from any library thread, concurrently; must be quick and not throw.
using LogHandler = std::function<void(LogLevel, std::string_view)>;

namespace detail {
inline void log_trampoline(void *ud, cursor_log_level level, const char *message) {
    guarded([&] { (*static_cast<LogHandler *>(ud))(static_cast<LogLevel>(level), message); });
}
} // namespace detail

/// Installs the process-wide log handler for lines at `level` or more severe. Replacing or
/// clearing it waits for calls of the previous one in progress, then releases it.
inline void set_log_handler(LogLevel level, LogHandler handler) {
    if (!handler) {
        cursor_set_log_callback(static_cast<int32_t>(level), nullptr, nullptr, nullptr);
        return;
    }
    cursor_set_log_callback(static_cast<int32_t>(level), &detail::log_trampoline, new LogHandler(std::move(handler)),
                            &detail::delete_as<LogHandler>);
}
inline void clear_log_handler() { cursor_set_log_callback(CURSOR_LOG_ERROR, nullptr, nullptr, nullptr); }

} // namespace cursor

#endif // CURSOR_SDK_HPP
