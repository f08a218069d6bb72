/*
 * A tiny test harness for the cursor_sdk C suites (header-only, one translation unit each).
 *
 * - TEST(name) defines a test; list it in a `static const h_test TESTS[]` table.
 * - CHECK* macros print `FAIL file:line [test]: ...` and return from the test on failure
 *   (later checks would only cascade). Every failure makes the process exit non-zero.
 * - main: `return h_main(TESTS, H_COUNT(TESTS), argc, argv);` runs every test, or only the
 *   names given on the command line (`--list` prints the names).
 * - Nothing is skipped silently: a missing environment variable is a failure that says why.
 */
#ifndef CURSOR_SDK_TEST_HARNESS_H
#define CURSOR_SDK_TEST_HARNESS_H

#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cursor_sdk.h"

typedef struct {
    const char *name;
    void (*fn)(void);
} h_test;

#define H_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define TEST(name) static void name(void)
#define T(name) {#name, name}

static int h_failures;
static int h_test_failed;
static const char *h_current = "(none)";
static pthread_mutex_t h_print_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void h_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&h_print_lock);
    fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, h_current);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    h_failures++;
    h_test_failed = 1;
    pthread_mutex_unlock(&h_print_lock);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            h_fail(__FILE__, __LINE__, "%s", #cond);                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            h_fail(__FILE__, __LINE__, __VA_ARGS__);                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* For helper threads: record the failure without returning a value. */
#define TCHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            h_fail(__FILE__, __LINE__, "%s", #cond);                                               \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static inline const char *h_msg(const cursor_error *e) {
    const char *m = cursor_error_message(e);
    return m ? m : "(no error object)";
}

/* The call must return `want`; on a mismatch the error message is printed. */
#define CHECK_ST(call, want)                                                                       \
    do {                                                                                           \
        cursor_error *h_e_ = NULL;                                                                 \
        cursor_error **h_err_ = &h_e_;                                                             \
        int h_got_ = (int)(call);                                                                  \
        (void)h_err_;                                                                              \
        if (h_got_ != (int)(want)) {                                                               \
            h_fail(__FILE__, __LINE__, "%s returned %s (%d), want %s: %s", #call,                  \
                   cursor_status_name(h_got_), h_got_, cursor_status_name((int)(want)),            \
                   h_msg(h_e_));                                                                   \
            cursor_error_free(h_e_);                                                               \
            return;                                                                                \
        }                                                                                          \
        cursor_error_free(h_e_);                                                                   \
    } while (0)

/* Use `ERR` as the err argument inside CHECK_ST / CHECK_OK. */
#define ERR h_err_
#define CHECK_OK(call) CHECK_ST(call, CURSOR_OK)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *h_a_ = (a), *h_b_ = (b);                                                       \
        if (!h_a_ || !h_b_ || strcmp(h_a_, h_b_) != 0) {                                           \
            h_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,                       \
                   h_a_ ? h_a_ : "(null)", h_b_ ? h_b_ : "(null)");                                \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_h_ = (hay), *h_n_ = (needle);                                                \
        if (!h_h_ || !strstr(h_h_, h_n_)) {                                                        \
            h_fail(__FILE__, __LINE__, "%s does not contain \"%s\": \"%s\"", #hay, h_n_,           \
                   h_h_ ? h_h_ : "(null)");                                                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long h_a_ = (long long)(a), h_b_ = (long long)(b);                                    \
        if (h_a_ != h_b_) {                                                                        \
            h_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, h_a_, h_b_);              \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- time ---- */

static inline double h_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static inline void h_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Timing limits are multiplied by CURSOR_SDK_TEST_TIME_SCALE (set to 5 under valgrind, 2 under
 * the sanitizers by scripts/c-test.sh). */
static inline double h_scale(void) {
    const char *s = getenv("CURSOR_SDK_TEST_TIME_SCALE");
    double v = s ? atof(s) : 1.0;
    return v >= 1.0 ? v : 1.0;
}

/* ---- environment, temp dirs, options ---- */

/* A required environment variable; a missing one fails the test loudly (no silent skip). */
static inline const char *h_env(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        h_fail(__FILE__, __LINE__, "environment variable %s is not set (run the suite through `make c-test`)", name);
        return NULL;
    }
    if (access(v, X_OK) != 0 && strstr(name, "BRIDGE")) {
        h_fail(__FILE__, __LINE__, "%s=%s is not an executable file (run `make fetch-bridge` / build the double)", name, v);
        return NULL;
    }
    return v;
}

static inline int h_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

typedef struct {
    char dir[256];
    char options[2048];
} h_env_t;

static inline h_env_t *h_tmp_new(void) {
    h_env_t *t = (h_env_t *)calloc(1, sizeof *t);
    const char *base = getenv("TMPDIR");
    snprintf(t->dir, sizeof t->dir, "%s/cursor-sdk-ctest-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(t->dir)) {
        perror("mkdtemp");
        abort();
    }
    char home[300];
    snprintf(home, sizeof home, "%s/home", t->dir);
    mkdir(home, 0700);
    return t;
}

static inline void h_tmp_free(h_env_t *t) {
    if (!t) return;
    nftw(t->dir, h_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(t);
}

/* Client options for `bridge` in the temp dir `t`, plus `extra` JSON members (may be ""). */
static inline const char *h_options(h_env_t *t, const char *bridge, const char *extra) {
    snprintf(t->options, sizeof t->options,
             "{\"bridgePath\":\"%s\",\"workspace\":\"%s\",\"apiKey\":\"test-key\","
             "\"bridgeEnv\":{\"HOME\":\"%s/home\",\"TMPDIR\":\"%s\","
             "\"CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON\":\"[{\\\"id\\\":\\\"composer-2\\\"}]\","
             "\"CURSOR_SDK_DOUBLE_KEEPALIVE_MS\":\"100\"}%s%s}",
             bridge, t->dir, t->dir, t->dir, (extra && *extra) ? "," : "", extra ? extra : "");
    return t->options;
}

/* The bridge token, read from <tmp>/cursor-sdk-bridge-XXXXXX/auth-token (the bridge's TMPDIR is the
 * test's temp dir) while the bridge runs. Returns false when there is no such file. */
static inline bool h_read_token(h_env_t *t, char *token, size_t len) {
    char pat[320];
    glob_t g;
    bool ok = false;
    snprintf(pat, sizeof pat, "%s/cursor-sdk-bridge-*/auth-token", t->dir);
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        FILE *f = fopen(g.gl_pathv[0], "r");
        if (f) {
            size_t k = fread(token, 1, len - 1, f);
            token[k] = 0;
            while (k > 0 && (token[k - 1] == '\n' || token[k - 1] == '\r')) token[--k] = 0;
            ok = k > 0;
            fclose(f);
        }
    }
    globfree(&g);
    return ok;
}

/* ---- tiny JSON helpers (enough for the flat fields the tests read) ---- */

/* Copies the string value of the first `"key":"…"` into buf; returns false when absent/null. */
static inline bool h_json_str(const char *json, const char *key, char *buf, size_t len) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = json ? strstr(json, pat) : NULL;
    if (!p) return false;
    p += strlen(pat);
    size_t i = 0;
    while (*p && *p != '"' && i + 1 < len) {
        if (*p == '\\' && p[1]) p++;
        buf[i++] = *p++;
    }
    buf[i] = 0;
    return true;
}

/* Counts non-overlapping occurrences of `needle`. */
static inline int h_count(const char *hay, const char *needle) {
    int n = 0;
    size_t l = strlen(needle);
    for (const char *p = hay; p && (p = strstr(p, needle)); p += l) n++;
    return n;
}

/* ---- runner ---- */

static inline int h_main(const h_test *tests, size_t n, int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    int ran = 0;
    double t0 = h_now_ms();
    for (int a = 1; a < argc; a++) {
        bool known = false;
        for (size_t i = 0; i < n; i++) known |= strcmp(argv[a], tests[i].name) == 0;
        if (!known) {
            fprintf(stderr, "FAIL: unknown test name \"%s\" (see --list)\n", argv[a]);
            return 2;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (argc > 1) {
            bool wanted = false;
            for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], tests[i].name) == 0;
            if (!wanted) continue;
        }
        h_current = tests[i].name;
        h_test_failed = 0;
        double s = h_now_ms();
        tests[i].fn();
        printf("%s %-40s %8.1f ms\n", h_test_failed ? "FAIL" : "ok  ", tests[i].name, h_now_ms() - s);
        ran++;
    }
    printf("%s: %d test(s), %d failure(s), %.1f s\n", argv[0], ran, h_failures, (h_now_ms() - t0) / 1000.0);
    if (ran == 0) {
        fprintf(stderr, "FAIL: no test ran\n");
        return 2;
    }
    return h_failures ? 1 : 0;
}

#endif /* CURSOR_SDK_TEST_HARNESS_H */
