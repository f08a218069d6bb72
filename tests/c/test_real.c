/*
 * The C ABI against the real cursor-sdk-bridge (CURSOR_SDK_TEST_REAL_BRIDGE), offline: no
 * Cursor backend is reachable, so a turn fails after ~16 s with "Failed to connect to API key
 * exchange endpoint". Covers the flow up to that point, cancel, busy, push mode, the wake fd,
 * management, paging, error objects and the log callback.
 *
 * scripts/c-test.sh runs it twice: on the pinned bridge (cursor-sdk 1.1.0) and on the oldest
 * supported one (cursor-sdk 1.0.26). Where the old bridge legitimately behaves differently, a test
 * branches on the bridge's manifest sdkVersion and says so.
 */
#define _XOPEN_SOURCE 700
#include <poll.h>

#include "common.h"

static const char *real_bin(void) { return h_env("CURSOR_SDK_TEST_REAL_BRIDGE"); }

/* The bridge's cursor-sdk release, from <bridge>/bin/../manifest.json ("" if unreadable, which
 * fails the calling test). */
static const char *real_sdk_version(void) {
    static char version[32];
    if (*version) return version;
    const char *bin = real_bin();
    const char *slash = bin ? strrchr(bin, '/') : NULL;
    if (!slash) return version;
    char path[1024], text[4096];
    int dir_len = (int)(slash - bin);
    snprintf(path, sizeof path, "%.*s/../manifest.json", dir_len, bin);
    FILE *f = fopen(path, "r");
    if (!f) return version;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strstr(text, "\"sdkVersion\"");
    if (p) p = strchr(p + strlen("\"sdkVersion\""), '"');
    if (p) sscanf(p + 1, "%31[^\"]", version);
    return version;
}

/* Whether the bridge is from a cursor-sdk release before major.minor.patch. */
static bool real_older_than(int major, int minor, int patch) {
    int a = 0, b = 0, c = 0;
    if (sscanf(real_sdk_version(), "%d.%d.%d", &a, &b, &c) != 3) {
        h_fail(__FILE__, __LINE__, "no sdkVersion in the manifest of %s", real_bin());
        return false;
    }
    return a != major ? a < major : b != minor ? b < minor : c < patch;
}

TEST(real_ping_version) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    CHECK_OK(cursor_client_ping(f.client, ERR));
    char *j = NULL;
    CHECK_OK(cursor_client_version(f.client, &j, ERR));
    CHECK_CONTAINS(j, "\"bridgeVersion\"");
    CHECK_CONTAINS(j, "\"protocolVersion\"");
    CHECK(strstr(j, "double") == NULL);
    printf("  bridge from cursor-sdk %s\n", real_sdk_version());
    CHECK(*real_sdk_version());
    cursor_string_free(j);
    CHECK(*cursor_agent_id(f.agent));
    fx_close(&f);
}

TEST(real_send_busy_cancel) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    cursor_run *r = NULL, *r2 = (cursor_run *)(uintptr_t)1;
    CHECK_OK(cursor_agent_send(f.agent, "Say hello", NULL, &r, ERR));
    CHECK(*cursor_run_id(r));
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_RUNNING);
    cursor_error *e = NULL;
    /* Before 1.0.27 the bridge refuses with a bare "internal error"; the library knows the agent
     * is busy because it streams a run of it. */
    CHECK_INT(cursor_agent_send(f.agent, "Again", NULL, &r2, &e), CURSOR_E_BUSY);
    CHECK_INT(cursor_error_kind(e), CURSOR_E_BUSY);
    CHECK(r2 == NULL);
    CHECK(cursor_error_connect_code(e) != NULL);
    CHECK_INT(cursor_error_http_status(e), 200); /* an end frame inside a stream */
    cursor_error_free(e);
    int fd = cursor_run_wait_fd(r);
    CHECK(fd >= 0);
    double s = h_now_ms();
    CHECK_OK(cursor_run_cancel(r, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    double took = h_now_ms() - s;
    printf("  cancel ended the real run in %.0f ms (%d events)\n", took, d->n);
    CHECK_INT(d->end_status, CURSOR_END);
    CHECKF(took < 10000, "cancel took %.0f ms", took);
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_INT(poll(&p, 1, 0), 1); /* readable at the end */
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_CANCELLED);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, -1, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"cancelled\"");
    cursor_string_free(res);
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int events, finals, after_final, final_kind;
    char last_type[24];
} real_push;

static void real_push_fn(void *ud, const cursor_event *ev, const cursor_error *er) {
    real_push *p = (real_push *)ud;
    pthread_mutex_lock(&p->lock);
    if (p->finals) p->after_final++;
    if (ev) {
        p->events++;
        snprintf(p->last_type, sizeof p->last_type, "%s", cursor_event_type(ev));
    } else {
        p->finals++;
        p->final_kind = er ? (int)cursor_error_kind(er) : 0;
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
}

TEST(real_push_mode_cancel) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "Say hello", NULL, &r, ERR));
    real_push p;
    memset(&p, 0, sizeof p);
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    CHECK_OK(cursor_run_set_callback(r, real_push_fn, &p, ERR));
    h_sleep_ms(300);
    CHECK_OK(cursor_run_cancel(r, ERR));
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 15;
    pthread_mutex_lock(&p.lock);
    while (!p.finals && pthread_cond_timedwait(&p.cond, &p.lock, &until) == 0) {
    }
    pthread_mutex_unlock(&p.lock);
    CHECK_INT(p.finals, 1);
    CHECK_INT(p.final_kind, 0);
    CHECK_STR(p.last_type, "result");
    cursor_run_free(r);
    CHECK_INT(p.finals, 1);
    CHECK_INT(p.after_final, 0);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.cond);
    fx_close(&f);
}

TEST(real_offline_turn_fails) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    cursor_run *r = NULL;
    double s = h_now_ms();
    CHECK_OK(cursor_agent_send(f.agent, "Say hello", NULL, &r, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    printf("  offline turn ended after %.1f s with %d events\n", (h_now_ms() - s) / 1000, d->n);
    CHECK_INT(d->end_status, CURSOR_END);
    CHECK_STR(d->types[d->n - 1], "result");
    CHECK_INT(d->kinds[d->n - 1], CURSOR_EVENT_RESULT);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_ERROR);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, -1, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"error\"");
    CHECK_CONTAINS(res, "API key exchange");
    cursor_string_free(res);
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(real_management_and_paging) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    const char *aid = cursor_agent_id(f.agent);
    char *j = NULL;
    CHECK_OK(cursor_agent_info(f.agent, &j, ERR));
    CHECK_CONTAINS(j, aid);
    cursor_string_free(j);
    char ids[3][128];
    snprintf(ids[0], sizeof ids[0], "%s", aid);
    for (int i = 1; i < 3; i++) {
        cursor_agent *a = NULL;
        CHECK_OK(cursor_agent_create(f.client, "{\"model\":\"composer-2\"}", &a, ERR));
        snprintf(ids[i], sizeof ids[i], "%s", cursor_agent_id(a));
        cursor_agent_free(a);
    }
    char cursor[1024] = "";
    int seen = 0, pages = 0;
    for (;;) {
        char opts[1200];
        if (*cursor)
            snprintf(opts, sizeof opts, "{\"limit\":1,\"cursor\":\"%s\"}", cursor);
        else
            snprintf(opts, sizeof opts, "{\"limit\":1}");
        char *page = NULL;
        CHECK_OK(cursor_client_list_agents(f.client, opts, &page, ERR));
        pages++;
        for (int i = 0; i < 3; i++) seen += strstr(page, ids[i]) != NULL;
        bool more = h_json_str(page, "nextCursor", cursor, sizeof cursor) && *cursor;
        cursor_string_free(page);
        if (!more) break;
        CHECK(pages < 20);
    }
    printf("  %d pages of 1\n", pages);
    CHECK_INT(seen, 3);
    CHECK(pages >= 3);
    CHECK_OK(cursor_client_list_runs(f.client, aid, NULL, &j, ERR));
    cursor_string_free(j);
    CHECK_OK(cursor_agent_archive(f.agent, ERR));
    CHECK_OK(cursor_agent_unarchive(f.agent, ERR));
    cursor_error *e = NULL;
    const char *gone = ids[1];
    /* A fresh agent's pre-created queued run blocks its deletion: the library cancels it and
     * retries (1.1.0 names the run; before 1.0.27 the bridge says only "internal error" and the
     * store is asked). */
    CHECK_OK(cursor_client_delete_agent(f.client, ids[1], NULL, ERR));
    CHECK_INT(cursor_client_get_agent(f.client, gone, NULL, &j, &e), CURSOR_E_NOT_FOUND);
    CHECK_STR(cursor_error_connect_code(e), "not_found");
    CHECK(cursor_error_sdk_code(e) != 0);
    CHECK_INT(cursor_error_http_status(e), 404);
    CHECK(!cursor_error_retryable(e));
    cursor_error_free(e);
    /* catalog calls need the Cursor backend: offline they fail, with an error object */
    CHECK_INT(cursor_client_me(f.client, NULL, &j, &e) < 0, 1);
    CHECK(j == NULL);
    printf("  me offline: %s\n", h_msg(e));
    cursor_error_free(e);
    fx_close(&f);
}

static log_capture LOGS = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};

TEST(real_log_callback_no_token) {
    log_capture_clear(&LOGS);
    cursor_set_log_callback(CURSOR_LOG_DEBUG, log_capture_fn, &LOGS, NULL);
    fixture f;
    CHECK(fx_open(&f, real_bin(), "\"verbose\":true"));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "Say hello", NULL, &r, ERR));
    h_sleep_ms(500);
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK_OK(cursor_run_wait(r, 15000, NULL, ERR));
    cursor_run_free(r);
    char token[128] = "";
    bool have_token = h_read_token(f.tmp, token, sizeof token);
    fx_close(&f);
    cursor_set_log_callback(CURSOR_LOG_DEBUG, NULL, NULL, NULL);
    pthread_mutex_lock(&LOGS.lock);
    int n = LOGS.n, leaks = 0, shaped = 0;
    for (int i = 0; i < n; i++) {
        if (getenv("CURSOR_SDK_TEST_SHOW_LOGS")) printf("  log: %s\n", LOGS.lines[i]);
        if (strstr(LOGS.lines[i], "Bearer ") || (have_token && strstr(LOGS.lines[i], token))) leaks++;
        if (has_token_shape(LOGS.lines[i])) {
            fprintf(stderr, "  token-shaped string in log line: %s\n", LOGS.lines[i]);
            shaped++;
        }
    }
    pthread_mutex_unlock(&LOGS.lock);
    printf("  %d log lines from the real bridge; token read: %s\n", n, have_token ? "yes" : "no");
    CHECK(n > 0);
    CHECK(have_token);
    CHECK_INT((int)strlen(token), 43);
    CHECK_INT(leaks, 0);
    CHECK_INT(shaped, 0);
    log_capture_clear(&LOGS);
}

/* Options the running bridge would silently drop are refused (src/compat.rs), and the version
 * JSON names the bridge's cursor-sdk release. */
TEST(real_compat_refuses_dropped_options) {
    fixture f;
    CHECK(fx_open(&f, real_bin(), ""));
    char *j = NULL, want[64];
    CHECK_OK(cursor_client_version(f.client, &j, ERR));
    snprintf(want, sizeof want, "\"sdkVersion\":\"%s\"", real_sdk_version());
    CHECK_CONTAINS(j, want);
    cursor_string_free(j);
    static const char *const dropped[][2] = {
        {"{\"model\":\"composer-2\",\"disallowedTools\":[\"shell\"]}", "disallowedTools"},
        {"{\"model\":\"composer-2\",\"tools\":[]}", "tools"},
        {"{\"model\":\"composer-2\",\"local\":{\"dirs\":[\"/tmp\"]}}", "local.dirs"},
    };
    for (size_t i = 0; i < H_COUNT(dropped); i++) {
        cursor_agent *a = NULL;
        cursor_error *e = NULL;
        if (real_older_than(1, 0, 27)) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%s needs cursor-sdk-bridge from cursor-sdk 1.0.27 or newer (this bridge is %s)",
                     dropped[i][1], real_sdk_version());
            CHECK_INT(cursor_agent_create(f.client, dropped[i][0], &a, &e), CURSOR_E_UNSUPPORTED);
            CHECK(a == NULL);
            CHECK_CONTAINS(cursor_error_message(e), msg);
            cursor_error_free(e);
            e = NULL;
            CHECK_INT(cursor_agent_resume(f.client, cursor_agent_id(f.agent), dropped[i][0], &a, &e),
                      CURSOR_E_UNSUPPORTED);
            CHECK_CONTAINS(cursor_error_message(e), dropped[i][1]);
            cursor_error_free(e);
        } else {
            CHECK_OK(cursor_agent_create(f.client, dropped[i][0], &a, ERR));
            cursor_agent_free(a);
        }
    }
    fx_close(&f);
}

static const h_test TESTS[] = {
    T(real_ping_version),     T(real_send_busy_cancel),      T(real_push_mode_cancel),
    T(real_offline_turn_fails), T(real_management_and_paging), T(real_log_callback_no_token),
    T(real_compat_refuses_dropped_options),
};

int main(int argc, char **argv) { return h_main(TESTS, H_COUNT(TESTS), argc, argv); }
