// frame_loop: a 60 Hz engine-style loop that streams a run without ever blocking.
//
// Each frame: poll() the run's descriptor with timeout 0; when readable, drain events with
// run.poll() until pending (which re-arms the descriptor) or the end; render the text that
// arrived; then sleep until the next frame. The run is cancelled from the frame thread when
// the deadline passes or a 'q' line arrives on stdin; the loop goes on until the stream ends.
// The worst frame's own time (pumping + work, not the sleep) must fit in the 16.7 ms budget.
//
// Usage: ./frame_loop [prompt] [deadline_ms] [model]
// With the bridge double: ./frame_loop scenario:slow:50 1000
#include <cursor_sdk.hpp>

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kFrame = std::chrono::microseconds(16667);

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int fail(const char *what, const cursor::Error &e) {
    std::fprintf(stderr, "%s failed: %.*s\n", what, static_cast<int>(e.message().size()), e.message().data());
    return 1;
}

// A 'q' line on stdin (when stdin is a terminal or a pipe with data); never blocks.
bool quit_requested() {
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    char buf[64];
    if (::poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return false;
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    return n > 0 && buf[0] == 'q';
}
} // namespace

int main(int argc, char **argv) {
    std::string prompt = argc > 1 ? argv[1] : "Count slowly to one hundred";
    double deadline_ms = argc > 2 ? std::stod(argv[2]) : 1000;
    std::string model = argc > 3 ? argv[3] : "composer-2";

    // Setup may block (the bridge starts): do it before the frame loop.
    auto client = cursor::Client::create();
    if (!client) return fail("Client::create", client.error());
    auto agent = client->create_agent("{\"model\":" + cursor::json_quote(model) + "}");
    if (!agent) return fail("create_agent", agent.error());
    auto run = agent->send(prompt);
    if (!run) return fail("send", run.error());
    int fd = run->fd();
    if (fd < 0) {
        std::fprintf(stderr, "no wake descriptor on this platform\n");
        return 1;
    }

    auto start = Clock::now(), next_frame = start;
    double worst = 0;
    long frames = 0, events = 0, chars = 0;
    bool cancelled = false, ended = false;
    int rc = 0;
    while (!ended) {
        auto frame_start = Clock::now();
        // 1. pump the run: never blocks
        struct pollfd p = {fd, POLLIN, 0};
        if (::poll(&p, 1, 0) == 1) {
            for (;;) {
                auto got = run->poll();
                if (!got) {
                    rc = fail("poll", got.error()); // reported once; the end follows
                    continue;
                }
                if (got->is_pending()) break;
                if (got->is_end()) {
                    ended = true;
                    break;
                }
                cursor::Event &ev = got->event();
                events++;
                // 2. render text as it arrives
                if (ev.type() == "assistant" && ev.text()) {
                    chars += static_cast<long>(ev.text()->size());
                    std::fwrite(ev.text()->data(), 1, ev.text()->size(), stderr);
                }
            }
        }
        // 3. cancel on the deadline or 'q' (returns at once; the stream then ends by itself)
        if (!cancelled && (ms_since(start) >= deadline_ms || quit_requested())) {
            auto c = run->cancel();
            if (!c) rc = fail("cancel", c.error());
            cancelled = true;
        }
        double took = ms_since(frame_start);
        if (took > worst) worst = took;
        frames++;
        // 4. sleep until the next frame
        next_frame += kFrame;
        if (next_frame > Clock::now()) std::this_thread::sleep_until(next_frame);
        else next_frame = Clock::now();
        if (ms_since(start) > deadline_ms + 10000) {
            std::fprintf(stderr, "the run did not end within 10 s of the cancel\n");
            rc = 1;
            break;
        }
    }

    auto result = run->wait_for(0);
    if (!result) rc = fail("wait_for", result.error());
    const char *status = run->status() == cursor::RunStatus::cancelled  ? "cancelled"
                         : run->status() == cursor::RunStatus::finished ? "finished"
                                                                         : "other";
    std::fprintf(stderr, "\n");
    std::printf("frames=%ld events=%ld chars=%ld cancelled=%d status=%s worst_frame_ms=%.3f budget_ms=16.667\n", frames,
                events, chars, cancelled ? 1 : 0, status, worst);
    std::string want = cancelled ? "\"status\":\"cancelled\"" : "\"status\":\"finished\"";
    if (result && (!*result || (*result)->find(want) == std::string::npos)) {
        std::fprintf(stderr, "unexpected result: %s\n", *result ? (*result)->c_str() : "(none)");
        rc = 1;
    }
    if (worst >= 16.667) {
        std::fprintf(stderr, "worst frame %.3f ms does not fit in the 16.7 ms budget\n", worst);
        rc = 1;
    }
    return rc;
}
