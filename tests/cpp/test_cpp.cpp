// The C++ binding (bindings/cpp/cursor_sdk.hpp) on the bridge double and the real bridge.
// scripts/cpp-test.sh builds this one source twice (with exceptions, and with -fno-exceptions
// -fno-rtti), both with -Werror and ASan+UBSan, and runs both.
#include "harness.hpp"

#include <poll.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <set>

using cursor::Status;

namespace {

std::string dbl() { return h::env("CURSOR_SDK_TEST_DOUBLE"); }
std::string real() { return h::env("CURSOR_SDK_TEST_REAL_BRIDGE"); }

/// What a range-for over a run saw.
struct Drained {
    std::vector<std::string> types;
    std::set<cursor::EventKind> kinds;
    std::string text;
    int offsets = 0;
};

Drained drain(cursor::Run &run) {
    Drained d;
    for (cursor::Event &ev : run) {
        d.types.emplace_back(ev.type());
        d.kinds.insert(ev.kind());
        if (ev.offset()) d.offsets++;
        if (ev.type() == "assistant" && ev.text()) d.text += *ev.text();
    }
    return d;
}

/// Counts its live copies: a handler holding one is released exactly when the count drops.
struct Sentinel {
    explicit Sentinel(std::shared_ptr<std::atomic<int>> n) : n_(std::move(n)) { ++*n_; }
    Sentinel(const Sentinel &o) : n_(o.n_) { ++*n_; }
    Sentinel &operator=(const Sentinel &) = delete;
    ~Sentinel() { --*n_; }
    std::shared_ptr<std::atomic<int>> n_;
};

/// The object value of the first `"key":{...}` in `json` (balanced braces; enough for store inputs).
std::optional<std::string> json_object_at(std::string_view json, const std::string &key) {
    size_t at = json.find("\"" + key + "\":{");
    if (at == std::string_view::npos) return std::nullopt;
    size_t start = at + key.size() + 3, depth = 0;
    bool in_str = false;
    for (size_t i = start; i < json.size(); i++) {
        char c = json[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && --depth == 0) {
            return std::string(json.substr(start, i - start + 1));
        }
    }
    return std::nullopt;
}

/// The string value of the first `"key":"..."` (no escapes inside: ids).
std::optional<std::string> json_string_at(std::string_view json, const std::string &key) {
    size_t at = json.find("\"" + key + "\":\"");
    if (at == std::string_view::npos) return std::nullopt;
    size_t start = at + key.size() + 4, end = json.find('"', start);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(json.substr(start, end - start));
}

} // namespace

// ---- the bridge double ----

TEST(double_version_and_status_names) {
    CHECK(cursor::version() == CURSOR_SDK_VERSION);
    CHECK(cursor::version_matches());
    CHECK(cursor::version_number() == CURSOR_SDK_VERSION_NUMBER);
    CHECK(cursor::status_name(Status::not_found) == "not_found");
    CHECK(cursor::status_name(static_cast<Status>(-999)) == "unknown");
    CHECK(cursor::json_quote("a\"b\\c\n") == "\"a\\\"b\\\\c\\u000a\"");
}

TEST(double_stream_with_range_for) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    CHECK(!agent.id().empty());
    REQUIRE_OK(run, agent.send("scenario:normal hello"));
    CHECK(!run.id().empty());
    Drained d = drain(run);
    CHECKM(!run.stream_error(), h::str(run.stream_error()->message()));
    CHECK(d.text == "Hello from the bridge double.");
    CHECK(d.types.size() == 13);
    CHECK(d.types.front() == "system");
    CHECK(d.types.back() == "result");
    CHECK(d.offsets == 13);
    CHECK(run.status() == cursor::RunStatus::finished);
    REQUIRE_OK(result, run.wait());
    CHECK_CONTAINS(result, "\"status\":\"finished\"");
    CHECK_CONTAINS(result, "Hello from the bridge double.");
    REQUIRE_OK(text, run.text());
    CHECK(text == "Hello from the bridge double.");
    // The stream is over: next() says so, and a second range-for sees nothing.
    REQUIRE_OK(after, run.next());
    CHECK(!after.has_value());
    CHECK(drain(run).types.empty());
    // The durable stream replays (the request message first).
    REQUIRE_OK(replay, run.observe());
    Drained r = drain(replay);
    CHECK(r.types.size() >= 10);
    CHECK(r.types.back() == "result");
}

TEST(double_every_event_kind_with_deltas_and_steps) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:normal", R"({"enableDeltas":true,"enableSteps":true})"));
    Drained d = drain(run);
    CHECK(!run.stream_error());
    using K = cursor::EventKind;
    CHECK((d.kinds == std::set<K>{K::message, K::delta, K::step, K::result}));
    CHECK(d.types.size() == 26); // offsets 1..27; the 27th is `done`, which never surfaces
    bool text_delta = false;
    for (auto &ty : d.types) text_delta |= ty == "text-delta";
    CHECK(text_delta);
}

TEST(double_event_json_and_views_live_with_the_event) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:normal"));
    std::vector<cursor::Event> kept;
    for (cursor::Event &ev : run) kept.push_back(std::move(ev));
    CHECK(kept.size() == 13);
    // Moved into the vector: the views are still valid (owned by the moved Event).
    CHECK(kept[0].type() == "system");
    CHECK_CONTAINS(kept[0].json(), "init");
    CHECK(kept[3].text() && *kept[3].text() == "Hello");
    CHECK(kept.back().kind() == cursor::EventKind::result);
    cursor_event *raw = kept.back().release();
    CHECK(!kept.back());
    CHECK(kept.back().type().empty());
    cursor_event_free(raw);
}

TEST(double_poll_and_fd_never_block_then_cancel) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:slow:50"));
    int fd = run.fd();
    CHECK(fd >= 0);
    double start = h::now_ms(), worst = 0;
    int events = 0;
    bool cancelled = false, ended = false;
    while (!ended && h::now_ms() - start < 10000 * h::scale()) {
        struct pollfd p = {fd, POLLIN, 0};
        if (::poll(&p, 1, 16) == 1) {
            for (;;) {
                double s = h::now_ms();
                REQUIRE_OK(got, run.poll());
                worst = std::max(worst, h::now_ms() - s);
                if (got.is_pending()) break;
                if (got.is_end()) {
                    ended = true;
                    break;
                }
                events++;
            }
        }
        if (!cancelled && h::now_ms() - start > 400) {
            CHECK_OK(run.cancel());
            cancelled = true;
        }
    }
    CHECK(ended);
    CHECK(events >= 4);
    CHECKM(worst < 20 * h::scale(), "a poll() took " + std::to_string(worst) + " ms");
    CHECK(run.status() == cursor::RunStatus::cancelled);
    // At the end the descriptor stays readable, and poll() keeps saying end.
    struct pollfd p = {fd, POLLIN, 0};
    CHECK(::poll(&p, 1, 0) == 1);
    REQUIRE_OK(again, run.poll());
    CHECK(again.is_end());
}

TEST(double_next_for_and_wait_for_time_out) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:slow:2000"));
    // Drain what is there at once (system, status, the first chunk), then time out.
    bool pending = false;
    for (int i = 0; i < 10 && !pending; i++) {
        double s = h::now_ms();
        REQUIRE_OK(got, run.next_for(std::chrono::milliseconds(100)));
        CHECK(!got.is_end());
        if (got.is_pending()) {
            double took = h::now_ms() - s;
            CHECKM(took >= 90 && took < 1000 * h::scale(), std::to_string(took) + " ms");
            pending = true;
        }
    }
    CHECK(pending);
    REQUIRE_OK(w, run.wait_for(std::chrono::milliseconds(50)));
    CHECK(!w.has_value());
    CHECK(run.status() == cursor::RunStatus::running);
    CHECK_OK(run.cancel());
    CHECK_OK(run.cancel()); // idempotent
    REQUIRE_OK(result, run.wait_for(std::chrono::milliseconds(static_cast<int>(10000 * h::scale()))));
    CHECK(result.has_value());
    CHECK_CONTAINS(*result, "\"status\":\"cancelled\"");
}

TEST(double_cancel_from_another_thread_wakes_the_reader) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:slow:5000"));
    std::atomic<double> cancel_at{0};
    std::atomic<bool> cancel_ok{false};
    std::thread canceller([&] {
        h::sleep_ms(300);
        cancel_at = h::now_ms();
        cancel_ok = run.cancel().ok();
    });
    Drained d = drain(run); // blocks in next() until the cancel ends the stream
    double woke = h::now_ms() - cancel_at;
    canceller.join();
    CHECK(cancel_ok);
    CHECK(!run.stream_error());
    CHECKM(woke < 2000 * h::scale(), "the reader woke " + std::to_string(woke) + " ms after the cancel");
    CHECK(d.types.back() == "result");
    CHECK(run.status() == cursor::RunStatus::cancelled);
    std::printf("  cancel from another thread: the reader woke after %.1f ms\n", woke);
}

TEST(double_push_mode) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:normal"));
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::string> types;
    int ends = 0;
    bool clean_end = false;
    CHECK_OK(run.on_events(
        [&](cursor::EventView ev) {
            std::lock_guard<std::mutex> g(m);
            types.emplace_back(ev.type());
        },
        [&](const cursor::Error *err) {
            std::lock_guard<std::mutex> g(m);
            ends++;
            clean_end = err == nullptr;
            cv.notify_all();
        }));
    CHECK_ERR(run.on_events([](cursor::EventView) {}, [](const cursor::Error *) {}), Status::usage);
    CHECK_ERR(run.poll(), Status::usage);
    std::unique_lock<std::mutex> lock(m);
    CHECK(cv.wait_for(lock, std::chrono::seconds(10), [&] { return ends > 0; }));
    CHECK(ends == 1);
    CHECK(clean_end);
    CHECK(types.size() == 13);
    CHECK(types.back() == "result");
}

TEST(double_errors_by_kind_with_every_field) {
    h::TempDir t;
    auto bad = cursor::Client::create(R"({"workspacee":"."})");
    CHECK(!bad);
    CHECK(bad.error().kind() == Status::invalid_argument);
    CHECK_CONTAINS(bad.error().message(), "workspacee");
    CHECK(!bad.error().connect_code());
    CHECK(!bad.error().retry_after());
    CHECK(!bad.error().retryable());
    CHECK(bad.error().raw() != nullptr);
    CHECK_ERR(cursor::Client::create(std::string_view("{}\0x", 4)), Status::invalid_argument);

    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    auto missing = client.resume_agent("agent-does-not-exist", R"({"model":"composer-2"})");
    CHECK(!missing);
    const cursor::Error &e = missing.error();
    CHECKM(e.kind() == Status::not_found, h::why(missing));
    CHECK(e.connect_code() && *e.connect_code() == "not_found");
    CHECK(e.sdk_code() != 0);
    CHECK(e.http_status() == 404);
    CHECK(!e.rate_limit());
    CHECK(!e.help_url());
    // Copies share the one C error: their views stay valid after the original is gone.
    cursor::Error copy = e;
    { auto moved = std::move(missing); }
    CHECK_CONTAINS(copy.message(), "not_found");

    CHECK_ERR(client.create_agent(R"({"model":"no-such-model"})"), Status::invalid_argument);
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:slow:50"));
    CHECK_ERR(agent.send("again"), Status::busy);
    CHECK_ERR(agent.send(std::string_view("a\0b", 3)), Status::invalid_argument);
    CHECK_OK(run.cancel());
    REQUIRE_OK(ended, run.wait());

    // A failed turn is not an Error of the run: its result says status error.
    REQUIRE_OK(failing, agent.send("scenario:fail"));
    REQUIRE_OK(result, failing.wait());
    CHECK_CONTAINS(result, "\"status\":\"error\"");
    CHECK(failing.status() == cursor::RunStatus::error);

    // A stream that breaks reports its error once (range-for stops; stream_error() has it).
    REQUIRE_OK(dying, agent.send("scenario:die:4"));
    Drained d = drain(dying);
    CHECK(dying.stream_error());
    CHECKM(dying.stream_error()->kind() == Status::bridge_exited, h::str(dying.stream_error()->message()));
    CHECK(d.types.size() == 4);
    // The next call starts a new bridge.
    CHECK_OK(client.ping());
}

TEST(double_prompt_one_shot) {
    // The process-wide default client: the double (CURSOR_SDK_BRIDGE_BIN) in the current dir.
    REQUIRE_OK(text, cursor::prompt("scenario:normal hi", R"({"model":"composer-2"})"));
    CHECK(text == "Hello from the bridge double.");
    auto failed = cursor::prompt("scenario:fail", R"({"model":"composer-2"})");
    CHECK(!failed);
    CHECK(failed.error().kind() == Status::run_failed);
    CHECK_CONTAINS(failed.error().message(), "scripted failure");
}

TEST(double_moved_from_objects_are_safe_and_say_so) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    cursor::Client owner = std::move(client);
    CHECK(!client);
    CHECK(owner);
    auto r = client.ping();
    CHECK(!r);
    CHECK(r.error().kind() == Status::usage);
    CHECK_CONTAINS(r.error().message(), "cursor::Client used after it was moved from");
    CHECK(r.error().raw() == nullptr);
    CHECK_ERR(client.create_agent(), Status::usage);
    CHECK_ERR(client.list_agents(), Status::usage);
    client.shutdown(); // a no-op on a moved-from client

    REQUIRE_OK(agent, owner.create_agent(R"({"model":"composer-2"})"));
    cursor::Agent a2(std::move(agent));
    CHECK(agent.id().empty());
    CHECK_ERR(agent.send("x"), Status::usage);
    CHECK_ERR(agent.info(), Status::usage);
    auto ar = agent.archive();
    CHECK(!ar);
    CHECK_CONTAINS(ar.error().message(), "cursor::Agent");

    REQUIRE_OK(run, a2.send("scenario:normal"));
    cursor::Run r2;
    r2 = std::move(run);
    CHECK(!run);
    CHECK(run.status() == cursor::RunStatus::invalid);
    CHECK(run.fd() == -1);
    CHECK(run.id().empty());
    CHECK_ERR(run.next(), Status::usage);
    CHECK_ERR(run.wait(), Status::usage);
    CHECK_ERR(run.cancel(), Status::usage);
    CHECK(drain(run).types.empty());
    CHECK(run.stream_error() && run.stream_error()->kind() == Status::usage);
    CHECK_CONTAINS(run.stream_error()->message(), "cursor::Run");

    // Self-move-assignment keeps the handle.
    cursor::Run &alias = r2;
    r2 = std::move(alias);
    CHECK(r2);
    REQUIRE_OK(result, r2.wait());
    CHECK_CONTAINS(result, "finished");

    // Results move too; a default Event is empty.
    auto res = a2.info();
    auto res2 = std::move(res);
    CHECK(res2);
    cursor::Event none;
    CHECK(!none);
    CHECK(none.kind() == cursor::EventKind::invalid);
    CHECK(!none.text());
    // After shutdown() the client refuses calls; its handles are still freed as usual.
    owner.shutdown();
    CHECK_ERR(owner.ping(), Status::usage);
    CHECK_ERR(a2.info(), Status::usage);
    // Destroying everything moved-from (at scope exit) must be harmless.
}

TEST(double_management) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    REQUIRE_OK(bv, client.bridge_version());
    CHECK_CONTAINS(bv, "protocolVersion");
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2","name":"cpp-double"})"));
    std::string id(agent.id());
    REQUIRE_OK(info, agent.info());
    CHECK_CONTAINS(info, "cpp-double");
    REQUIRE_OK(page, client.list_agents(R"({"limit":10})"));
    CHECK_CONTAINS(page, id);
    REQUIRE_OK(got, client.get_agent(id));
    CHECK_CONTAINS(got, id);
    REQUIRE_OK(run, agent.send("scenario:normal"));
    std::string run_id(run.id());
    REQUIRE_OK(res, run.wait());
    REQUIRE_OK(runs, client.list_runs(id));
    CHECK_CONTAINS(runs, run_id);
    REQUIRE_OK(snap, client.get_run(run_id, "{\"agentId\":" + cursor::json_quote(id) + "}"));
    CHECK_CONTAINS(snap, run_id);
    REQUIRE_OK(conv, client.run_conversation(run_id));
    REQUIRE_OK(msgs, agent.messages(R"({"limit":5})"));
    REQUIRE_OK(usage, agent.usage());
    CHECK_CONTAINS(usage, "120");
    REQUIRE_OK(arts, agent.artifacts());
    CHECK_CONTAINS(arts, "report.txt");
    REQUIRE_OK(bytes, agent.download_artifact("artifacts/report.txt"));
    CHECK(bytes.size() == 100000);
    CHECK_OK(client.cancel_run(id, run_id)); // over: left as it is
    CHECK_OK(agent.archive());
    CHECK_OK(agent.unarchive());
    CHECK_OK(client.archive_agent(id));
    CHECK_OK(client.unarchive_agent(id));
    CHECK_OK(agent.reload());
    CHECK_OK(agent.close());
    CHECK_OK(agent.remove());
    CHECK_ERR(client.get_agent(id), Status::not_found);
    REQUIRE_OK(other, client.create_agent(R"({"model":"composer-2"})"));
    CHECK_OK(client.delete_agent(other.id()));
    CHECK_ERR(client.get_agent(other.id()), Status::not_found);
    // Catalog calls without a key fail with a typed error; with one, the double answers.
    REQUIRE_OK(models, client.models());
    CHECK_CONTAINS(models, "composer");
}

TEST(double_tool_answered_late_from_another_thread) {
    h::TempDir t;
    auto freed = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> calls{0};
    std::vector<std::thread> answerers;
    std::mutex m;
    // Joins the answering threads on every way out (a failed check returns early).
    struct Joiner {
        std::vector<std::thread> &threads;
        std::mutex &lock;
        ~Joiner() {
            std::lock_guard<std::mutex> g(lock);
            for (auto &th : threads)
                if (th.joinable()) th.join();
        }
    } joiner{answerers, m};
    {
        REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
        auto handler = [s = Sentinel(freed), &calls, &answerers, &m](cursor::ToolCall call) {
                                     calls++;
                                     std::lock_guard<std::mutex> g(m);
                                     // Ownership moves to another thread, which answers later.
                                     answerers.emplace_back([call = std::move(call)]() mutable {
                                         h::sleep_ms(30);
                                         if (!call.complete(R"({"late":true,"by":"C++"})"))
                                             h::fail(__FILE__, __LINE__, "late completion refused");
                                         auto again = call.complete("{}");
                                         if (again || again.error().kind() != Status::usage)
                                             h::fail(__FILE__, __LINE__, "a second completion was not refused");
                                     });
        };
        CHECK_OK(client.add_tool("late_tool", "Answers later", R"({"type":"object"})", std::move(handler)));
        CHECK(*freed >= 1); // the registered copy lives
        REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
        REQUIRE_OK(run, agent.send("scenario:tool:late_tool"));
        REQUIRE_OK(result, run.wait_for(static_cast<int32_t>(30000 * h::scale())));
        CHECK(result);
        CHECK_CONTAINS(*result, "\"status\":\"finished\"");
        CHECK_CONTAINS(*result, "C++");
        CHECK(calls == 1);
        std::lock_guard<std::mutex> g(m);
        for (auto &th : answerers) th.join(); // before the client goes
    }
    CHECK(*freed == 0); // the handler is released by the client's destructor
}

TEST(double_tool_fail_drop_and_registration_errors) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(dbl())));
    CHECK_OK(client.add_tool("failing", std::nullopt, std::nullopt, [](cursor::ToolCall &&call) {
        CHECK_OK(call.fail("the C++ tool failed on purpose"));
        CHECK(call.name() == "failing");
        CHECK_CONTAINS(call.args_json(), "hello from the double");
        CHECK(call.id());
        CHECK(!call.agent_id().empty());
    }));
    CHECK_OK(client.add_tool("dropping", std::nullopt, std::nullopt, [](cursor::ToolCall &&) {}));
    CHECK_ERR(client.add_tool("bad name!", std::nullopt, std::nullopt, [](cursor::ToolCall &&) {}), Status::invalid_argument);
    CHECK_ERR(client.add_tool("x", std::nullopt, "{not json", [](cursor::ToolCall &&) {}), Status::invalid_argument);
    CHECK_ERR(client.add_tool("x", std::nullopt, std::nullopt, nullptr), Status::invalid_argument);
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("scenario:tool:failing"));
    REQUIRE_OK(result, run.wait());
    CHECK_CONTAINS(result, "failed on purpose");
    CHECK_CONTAINS(result, "\"status\":\"finished\"");
    REQUIRE_OK(agent2, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run2, agent2.send("scenario:tool:dropping"));
    REQUIRE_OK(result2, run2.wait());
    CHECK_CONTAINS(result2, "dropped");
    // A moved-from call says so.
    cursor::ToolCall empty(nullptr);
    CHECK_ERR(empty.complete("{}"), Status::usage);
}

TEST(double_custom_store_and_its_failure) {
    h::TempDir t;
    auto freed = std::make_shared<std::atomic<int>>(0);
    std::atomic<int> calls{0};
    {
        Sentinel s(freed);
        REQUIRE_OK(client, cursor::Client::create_with_store(t.options(dbl()), [s, &calls](cursor::StoreCall &call) {
            calls++;
            if (call.substore() == "agents" && call.method() == "create") {
                CHECK_OK(call.fail("disk on fire"));
                return;
            }
            CHECK_OK(call.ok(std::nullopt)); // a miss
        }));
        auto agent = client.create_agent(R"({"model":"composer-2"})");
        CHECK(!agent);
        CHECK_CONTAINS(agent.error().message(), "disk on fire");
        CHECK(calls >= 1);
    }
    CHECK(*freed == 0);
    CHECK_ERR(cursor::Client::create_with_store(std::nullopt, nullptr), Status::invalid_argument);
}

TEST(double_custom_store_keeps_the_agents) {
    h::TempDir t;
    std::mutex m;
    std::map<std::string, std::string> agents; // agentId -> the agent record
    int replies_refused = 0;
    {
        REQUIRE_OK(client, cursor::Client::create_with_store(t.options(dbl()), [&](cursor::StoreCall &call) {
            std::lock_guard<std::mutex> g(m);
            cursor::Result<void> r;
            if (call.substore() == "agents" && (call.method() == "create" || call.method() == "update")) {
                auto row = json_object_at(call.input_json(), "agent");
                auto id = row ? json_string_at(*row, "agentId") : std::nullopt;
                if (id) agents[*id] = *row;
                r = call.ok(row ? std::optional<std::string_view>(*row) : std::nullopt);
            } else if (call.substore() == "agents" && call.method() == "get") {
                auto id = json_string_at(call.input_json(), "agentId");
                auto it = id ? agents.find(*id) : agents.end();
                r = call.ok(it != agents.end() ? std::optional<std::string_view>(it->second) : std::nullopt);
            } else if (call.substore() == "agents" && call.method() == "list") {
                std::string out = "{\"items\":[";
                for (auto &kv : agents) out += (out.back() == '[' ? "" : ",") + kv.second;
                r = call.ok(out + "]}");
            } else {
                r = call.ok(std::nullopt);
            }
            if (!r) h::fail(__FILE__, __LINE__, "store reply: " + h::why(r));
            auto again = call.ok(std::nullopt); // once per call
            if (!again && again.error().kind() == Status::usage) replies_refused++;
        }));
        REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2","name":"kept-in-cpp"})"));
        {
            std::lock_guard<std::mutex> g(m);
            CHECK(agents.count(std::string(agent.id())) == 1);
            CHECK_CONTAINS(agents[std::string(agent.id())], "kept-in-cpp");
        }
        REQUIRE_OK(info, agent.info());
        CHECK_CONTAINS(info, "kept-in-cpp");
        REQUIRE_OK(page, client.list_agents());
        CHECK_CONTAINS(page, agent.id());
        CHECK_OK(agent.archive());
    }
    CHECK(replies_refused >= 5);
}

TEST(double_log_handler) {
    h::TempDir t;
    auto freed = std::make_shared<std::atomic<int>>(0);
    std::mutex m;
    std::vector<std::string> lines;
    bool bad_level = false;
    // The handler refers to the locals above: clear it on every way out.
    struct Clear {
        ~Clear() { cursor::clear_log_handler(); }
    } clear;
    {
        Sentinel s(freed);
        cursor::set_log_handler(cursor::LogLevel::debug, [s, &m, &lines, &bad_level](cursor::LogLevel level, std::string_view line) {
            std::lock_guard<std::mutex> g(m);
            bad_level |= level < cursor::LogLevel::error || level > cursor::LogLevel::debug;
            lines.emplace_back(line);
        });
    }
    {
        REQUIRE_OK(client, cursor::Client::create(t.options(dbl(), "\"verbose\":true")));
        CHECK_OK(client.ping());
    }
    cursor::clear_log_handler(); // waits for calls in progress, then releases the handler
    CHECK(*freed == 0);
    std::lock_guard<std::mutex> g(m);
    CHECK(!lines.empty());
    CHECK(!bad_level);
}

#ifdef CURSOR_SDK_EXCEPTIONS
TEST(double_throwing_layer) {
    h::TempDir t;
    auto client = cursor::Client::create(t.options(dbl())).value_or_throw();
    bool caught = false;
    try {
        client.resume_agent("nope", R"({"model":"composer-2"})").value_or_throw();
    } catch (const cursor::Exception &e) {
        caught = e.kind() == Status::not_found && std::string(e.what()).find("not_found") != std::string::npos;
    }
    CHECK(caught);
    caught = false;
    try {
        cursor::Client moved = std::move(client);
        client.ping().throw_if_error();
    } catch (const std::exception &e) {
        caught = std::string(e.what()).find("moved from") != std::string::npos;
    }
    CHECK(caught);
    // A handler that throws: the model sees the exception's text, the run goes on.
    REQUIRE_OK(c2, cursor::Client::create(t.options(dbl())));
    CHECK_OK(c2.add_tool("thrower", std::nullopt, std::nullopt,
                         [](cursor::ToolCall &&) { throw std::runtime_error("boom from C++"); }));
    auto agent = c2.create_agent(R"({"model":"composer-2"})").value_or_throw();
    auto run = agent.send("scenario:tool:thrower").value_or_throw();
    std::string result = run.wait().value_or_throw();
    CHECK_CONTAINS(result, "boom from C++");
    CHECK_CONTAINS(result, "\"status\":\"finished\"");
}
#endif

// ---- the real bridge (cursor-sdk 1.1.0; no Cursor backend reachable) ----

TEST(real_version_and_ping) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(real())));
    CHECK_OK(client.start());
    CHECK_OK(client.ping());
    REQUIRE_OK(v, client.bridge_version());
    CHECK_CONTAINS(v, "\"sdkVersion\":\"1.1.0\"");
    CHECK_CONTAINS(v, "bridgeVersion");
}

TEST(real_management_and_typed_errors) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(real())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2","name":"cpp-real"})"));
    REQUIRE_OK(info, agent.info());
    CHECK_CONTAINS(info, "cpp-real");
    REQUIRE_OK(page, client.list_agents(R"({"limit":5})"));
    CHECK_CONTAINS(page, agent.id());
    REQUIRE_OK(runs, client.list_runs(agent.id()));
    CHECK_OK(agent.archive());
    CHECK_OK(agent.unarchive());
    std::string other_id;
    {
        REQUIRE_OK(other, client.create_agent(R"({"model":"composer-2"})"));
        other_id = other.id();
    }
    CHECK_OK(client.delete_agent(other_id));
    auto gone = client.get_agent(other_id);
    CHECK(!gone);
    CHECKM(gone.error().kind() == Status::not_found, h::why(gone));
    CHECK(gone.error().connect_code() && *gone.error().connect_code() == "not_found");
    CHECK(gone.error().sdk_code() != 0);
    // Catalog calls need the Cursor backend: offline they fail with a typed error.
    auto me = client.me();
    CHECK(!me);
    CHECK(!me.error().message().empty());
}

TEST(real_offline_turn_fails_with_its_reason) {
    h::TempDir t;
    REQUIRE_OK(client, cursor::Client::create(t.options(real())));
    REQUIRE_OK(agent, client.create_agent(R"({"model":"composer-2"})"));
    REQUIRE_OK(run, agent.send("Say hello"));
    CHECK(!run.id().empty());
    CHECK(run.status() == cursor::RunStatus::running);
    CHECK_ERR(agent.send("Again"), Status::busy);
    double t0 = h::now_ms();
    Drained d = drain(run);
    std::printf("  real: the offline turn ended after %.0f ms with %zu events\n", h::now_ms() - t0, d.types.size());
    CHECKM(!run.stream_error(), h::str(run.stream_error()->message()));
    CHECK(!d.types.empty() && d.types.back() == "result");
    CHECK(run.status() == cursor::RunStatus::error);
    REQUIRE_OK(result, run.wait());
    CHECK_CONTAINS(result, "\"status\":\"error\"");
    CHECK_CONTAINS(result, "API key exchange");
}

int main(int argc, char **argv) { return h::main(argc, argv); }
