// A tiny harness for the C++ suite (works with and without exceptions and RTTI).
//
// - TEST(name) defines and registers a test; CHECK* print `FAIL file:line [test]: ...` and
//   return from the test. Any failure makes the process exit non-zero.
// - main runs every test, or the names given on the command line (`--list` prints them).
// - Nothing is skipped: a missing environment variable is a failure that says why.
#ifndef CURSOR_SDK_CPP_TEST_HARNESS_HPP
#define CURSOR_SDK_CPP_TEST_HARNESS_HPP

#include "cursor_sdk.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace h {

struct Test {
    const char *name;
    void (*fn)();
};
inline std::vector<Test> &registry() {
    static std::vector<Test> tests;
    return tests;
}
struct Register {
    Register(const char *name, void (*fn)()) { registry().push_back({name, fn}); }
};

inline std::atomic<int> failures{0};
inline std::atomic<bool> test_failed{false};
inline const char *current = "(none)";
inline std::mutex print_lock;

inline void fail(const char *file, int line, const std::string &what) {
    std::lock_guard<std::mutex> g(print_lock);
    std::fprintf(stderr, "FAIL %s:%d [%s]: %s\n", file, line, current, what.c_str());
    std::fflush(stderr);
    failures++;
    test_failed = true;
}

inline std::string str(std::string_view s) { return std::string(s); }

/// "<kind>: <message>" of a failed Result (for failure messages).
template <class R>
std::string why(const R &r) {
    return r ? std::string("(ok)") : str(cursor::status_name(r.error().kind())) + " / " + str(r.error().message());
}

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
/// Timing bounds are multiplied by CURSOR_SDK_TEST_TIME_SCALE (2 under the sanitizers).
inline double scale() {
    const char *s = getenv("CURSOR_SDK_TEST_TIME_SCALE");
    double v = s ? atof(s) : 1.0;
    return v >= 1.0 ? v : 1.0;
}

inline std::string env(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        fail(__FILE__, __LINE__, std::string("environment variable ") + name + " is not set (run `make cpp-test`)");
        return {};
    }
    if (std::strstr(name, "BRIDGE") && access(v, X_OK) != 0) {
        fail(__FILE__, __LINE__, std::string(name) + "=" + v + " is not executable (run `make fetch-bridge`)");
        return {};
    }
    return v;
}

/// A temp dir (with home/) removed at scope exit, and client options for a bridge in it.
class TempDir {
public:
    TempDir() {
        const char *base = getenv("TMPDIR");
        std::string pat = std::string(base && *base ? base : "/tmp") + "/cursor-sdk-cpptest-XXXXXX";
        std::vector<char> buf(pat.begin(), pat.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data())) {
            std::perror("mkdtemp");
            std::abort();
        }
        dir_ = buf.data();
        std::error_code ec;
        std::filesystem::create_directory(dir_ + "/home", ec);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::string &dir() const { return dir_; }
    std::string options(const std::string &bridge, const std::string &extra = "") const {
        using cursor::json_quote;
        return "{\"bridgePath\":" + json_quote(bridge) + ",\"workspace\":" + json_quote(dir_) +
               ",\"apiKey\":\"test-key\",\"bridgeEnv\":{\"HOME\":" + json_quote(dir_ + "/home") +
               ",\"TMPDIR\":" + json_quote(dir_) +
               ",\"CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON\":\"[{\\\"id\\\":\\\"composer-2\\\"}]\"" +
               ",\"CURSOR_SDK_DOUBLE_KEEPALIVE_MS\":\"100\"}" + (extra.empty() ? "" : "," + extra) + "}";
    }

private:
    std::string dir_;
};

inline int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    auto &tests = registry();
    if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {
        for (auto &t : tests) std::printf("%s\n", t.name);
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        bool known = false;
        for (auto &t : tests) known |= std::strcmp(argv[a], t.name) == 0;
        if (!known) {
            std::fprintf(stderr, "FAIL: unknown test name \"%s\" (see --list)\n", argv[a]);
            return 2;
        }
    }
#ifdef CURSOR_SDK_EXCEPTIONS
    const char *exceptions = "on";
#else
    const char *exceptions = "off";
#endif
#if defined(__GXX_RTTI) || defined(__cpp_rtti)
    const char *rtti = "on";
#else
    const char *rtti = "off";
#endif
    std::printf("%s: exceptions %s, rtti %s\n", argv[0], exceptions, rtti);
    int ran = 0;
    double t0 = now_ms();
    for (auto &t : tests) {
        if (argc > 1) {
            bool wanted = false;
            for (int a = 1; a < argc; a++) wanted |= std::strcmp(argv[a], t.name) == 0;
            if (!wanted) continue;
        }
        current = t.name;
        test_failed = false;
        double s = now_ms();
        t.fn();
        std::printf("%s %-48s %8.1f ms\n", test_failed ? "FAIL" : "ok  ", t.name, now_ms() - s);
        ran++;
    }
    std::printf("%s: %d test(s), %d failure(s), %.1f s\n", argv[0], ran, failures.load(), (now_ms() - t0) / 1000.0);
    if (ran == 0) {
        std::fprintf(stderr, "FAIL: no test ran\n");
        return 2;
    }
    return failures ? 1 : 0;
}

} // namespace h

#define TEST(name)                                                                                 \
    static void name();                                                                            \
    static const h::Register name##_registered(#name, name);                                       \
    static void name()

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) return h::fail(__FILE__, __LINE__, #cond);                                    \
    } while (0)

#define CHECKM(cond, msg)                                                                          \
    do {                                                                                           \
        if (!(cond)) return h::fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg));       \
    } while (0)

/// A Result that must be ok; binds its value to `var`.
#define REQUIRE_OK(var, expr)                                                                      \
    auto var##_result = (expr);                                                                    \
    if (!var##_result) return h::fail(__FILE__, __LINE__, std::string(#expr) + ": " + h::why(var##_result)); \
    auto var = std::move(var##_result).value()

/// A Result<void> that must be ok.
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        auto h_r_ = (expr);                                                                        \
        if (!h_r_) return h::fail(__FILE__, __LINE__, std::string(#expr) + ": " + h::why(h_r_));  \
    } while (0)

/// A Result that must fail with `kind`.
#define CHECK_ERR(expr, want)                                                                      \
    do {                                                                                           \
        auto h_r_ = (expr);                                                                        \
        if (h_r_) return h::fail(__FILE__, __LINE__, std::string(#expr) + " succeeded");           \
        if (h_r_.error().kind() != (want))                                                         \
            return h::fail(__FILE__, __LINE__, std::string(#expr) + ": " + h::why(h_r_));         \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        std::string h_h_(hay), h_n_(needle);                                                       \
        if (h_h_.find(h_n_) == std::string::npos)                                                  \
            return h::fail(__FILE__, __LINE__, std::string(#hay) + " lacks \"" + h_n_ + "\": " + h_h_.substr(0, 600)); \
    } while (0)

#endif
