/*
 * Custom tools (against the bridge double, which can make tool calls) and a custom store
 * (against the real bridge) through the C API. Built and run by scripts/c-test.sh in every mode
 * (plain, AddressSanitizer + UBSan, valgrind).
 */
#define _XOPEN_SOURCE 700
#include "common.h"

#include <stdatomic.h>

/* ---- tools ---- */

typedef struct {
    atomic_int calls;
    atomic_int freed;
    atomic_int second_completion_refused;
    int mode; /* 0 answer now, 1 answer later from another thread, 2 fail, 3 scalar */
} tool_state;

static void *answer_later(void *arg) {
    cursor_tool_call *call = (cursor_tool_call *)arg;
    h_sleep_ms(30);
    if (cursor_tool_call_complete(call, "{\"late\":true}", NULL) != CURSOR_OK) {
        h_fail(__FILE__, __LINE__, "late completion refused");
    }
    cursor_tool_call_free(call);
    return NULL;
}

static void on_tool(void *user_data, cursor_tool_call *call) {
    tool_state *s = (tool_state *)user_data;
    atomic_fetch_add(&s->calls, 1);
    if (!strstr(cursor_tool_call_args_json(call), "hello from the double")) {
        h_fail(__FILE__, __LINE__, "unexpected args %s", cursor_tool_call_args_json(call));
    }
    if (!cursor_tool_call_agent_id(call) || !cursor_tool_call_id(call)) {
        h_fail(__FILE__, __LINE__, "missing agent id or call id");
    }
    switch (s->mode) {
    case 1: {
        pthread_t t;
        pthread_create(&t, NULL, answer_later, call);
        pthread_detach(t);
        return;
    }
    case 2:
        cursor_tool_call_fail(call, "the C tool failed on purpose", NULL);
        break;
    case 3:
        cursor_tool_call_complete(call, "42", NULL);
        break;
    default:
        cursor_tool_call_complete(call, "{\"from\":\"C\"}", NULL);
        break;
    }
    cursor_error *e = NULL;
    if (cursor_tool_call_complete(call, "{}", &e) == CURSOR_E_USAGE) {
        atomic_fetch_add(&s->second_completion_refused, 1);
    }
    cursor_error_free(e);
    cursor_tool_call_free(call);
}

static void free_tool_state(void *user_data) {
    atomic_fetch_add(&((tool_state *)user_data)->freed, 1);
}

/* Sends `message` on a fresh agent and returns the result JSON (caller frees). */
static char *run_and_wait(cursor_client *c, const char *message) {
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    char *result = NULL;
    cursor_error *e = NULL;
    if (cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, &e) != CURSOR_OK ||
        cursor_agent_send(a, message, NULL, &r, &e) != CURSOR_OK ||
        cursor_run_wait(r, (int32_t)(30000 * h_scale()), &result, &e) != CURSOR_OK) {
        h_fail(__FILE__, __LINE__, "run failed: %s", h_msg(e));
    }
    cursor_error_free(e);
    cursor_run_free(r);
    cursor_agent_free(a);
    return result;
}

static bool tool_round_trip(int mode, const char *want) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    if (!dbl) return false;
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    tool_state s = {0};
    s.mode = mode;
    bool ok = false;
    char *result = NULL;
    if (cursor_client_new(h_options(t, dbl, ""), &c, NULL) != CURSOR_OK) goto out;
    if (cursor_client_add_tool(c, "ctool", "A tool written in C",
                               "{\"type\":\"object\",\"properties\":{\"input\":{\"type\":\"string\"}}}",
                               on_tool, &s, free_tool_state, NULL) != CURSOR_OK) {
        goto out;
    }
    result = run_and_wait(c, "scenario:tool:ctool");
    if (!result || !strstr(result, "\"status\":\"finished\"") || !strstr(result, want)) {
        h_fail(__FILE__, __LINE__, "mode %d: result %s lacks %s", mode, result ? result : "(null)", want);
        goto out;
    }
    if (atomic_load(&s.calls) != 1) {
        h_fail(__FILE__, __LINE__, "calls = %d", atomic_load(&s.calls));
        goto out;
    }
    if (mode != 1 && atomic_load(&s.second_completion_refused) != 1) {
        h_fail(__FILE__, __LINE__, "a second completion was not refused with CURSOR_E_USAGE");
        goto out;
    }
    if (atomic_load(&s.freed) != 0) {
        h_fail(__FILE__, __LINE__, "user_data_free ran while the tool was registered");
        goto out;
    }
    ok = true;
out:
    cursor_string_free(result);
    cursor_client_free(c);
    if (ok && atomic_load(&s.freed) != 1) {
        h_fail(__FILE__, __LINE__, "user_data_free ran %d times, want exactly 1", atomic_load(&s.freed));
        ok = false;
    }
    h_tmp_free(t);
    return ok;
}

TEST(tool_answers_now) { CHECK(tool_round_trip(0, "from")); }
TEST(tool_answers_later_from_another_thread) { CHECK(tool_round_trip(1, "late")); }
TEST(tool_failure_reaches_the_model_and_the_run_goes_on) { CHECK(tool_round_trip(2, "failed on purpose")); }
TEST(tool_scalar_result_is_wrapped) { CHECK(tool_round_trip(3, "42")); }

TEST(tool_registration_misuse) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    tool_state s = {0};
    CHECK_OK(cursor_client_new(h_options(t, dbl, ""), &c, ERR));
    CHECK_ST(cursor_client_add_tool(NULL, "x", NULL, NULL, on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, NULL, NULL, NULL, on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, "bad name!", NULL, NULL, on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, "x", NULL, "{not json", on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, "x", NULL, "[1]", on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, "x", NULL, NULL, NULL, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_tool(c, "x\xff", NULL, NULL, on_tool, &s, free_tool_state, ERR), CURSOR_E_INVALID_ARGUMENT);
    /* Cloud agents cannot have custom tools: refused, not silently dropped. */
    CHECK_OK(cursor_client_add_tool(c, "ok_tool", NULL, NULL, on_tool, &s, free_tool_state, ERR));
    cursor_agent *a = NULL;
    CHECK_ST(cursor_agent_create(c, "{\"model\":\"composer-2\",\"cloud\":{\"repos\":[{\"url\":\"https://github.com/a/b\"}]}}", &a, ERR),
             CURSOR_E_INVALID_ARGUMENT);
    CHECK(a == NULL);
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1); /* only the one that was registered */
    h_tmp_free(t);
    cursor_tool_call_free(NULL);
    CHECK(cursor_tool_call_name(NULL) == NULL);
    CHECK(cursor_tool_call_args_json(NULL) == NULL);
    CHECK_ST(cursor_tool_call_complete(NULL, "{}", ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_tool_call_fail(NULL, "x", ERR), CURSOR_E_INVALID_ARGUMENT);
}

TEST(fifty_concurrent_tool_calls) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    tool_state s = {0};
    s.mode = 1; /* each answered later from its own thread */
    CHECK_OK(cursor_client_new(h_options(t, dbl, ""), &c, ERR));
    CHECK_OK(cursor_client_add_tool(c, "ctool", NULL, NULL, on_tool, &s, free_tool_state, ERR));
    double t0 = h_now_ms();
    char *result = run_and_wait(c, "scenario:tools:50");
    double took = h_now_ms() - t0;
    CHECK(result != NULL);
    CHECK_CONTAINS(result, "\"status\":\"finished\"");
    cursor_string_free(result);
    CHECK_INT(atomic_load(&s.calls), 50);
    /* 50 calls of 30 ms each, one after another, would take 1.5 s. */
    CHECKF(took < 1500.0 * h_scale(), "50 tool calls took %.0f ms: not concurrent", took);
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1);
    h_tmp_free(t);
}

/* ---- lifetimes at cursor_client_free (an agent and a run still alive) ---- */

typedef struct {
    atomic_int running;
    atomic_int freed;
    atomic_int freed_while_running;
} life_state;

static void on_slow_tool(void *user_data, cursor_tool_call *call) {
    life_state *s = (life_state *)user_data;
    atomic_fetch_add(&s->running, 1);
    h_sleep_ms(2500); /* longer than the old server's 2 s grace at stop */
    cursor_tool_call_complete(call, "\"slow\"", NULL);
    cursor_tool_call_free(call);
    atomic_fetch_sub(&s->running, 1);
}

static void free_life_state(void *user_data) {
    life_state *s = (life_state *)user_data;
    if (atomic_load(&s->running) > 0) atomic_fetch_add(&s->freed_while_running, 1);
    atomic_fetch_add(&s->freed, 1);
}

static bool wait_for(atomic_int *v, int want, int ms) {
    for (double t0 = h_now_ms(); atomic_load(v) != want; h_sleep_ms(1)) {
        if (h_now_ms() - t0 > ms * h_scale()) return false;
    }
    return true;
}

TEST(client_free_waits_for_a_running_tool_and_frees_it_while_an_agent_lives) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    life_state s = {0};
    CHECK_OK(cursor_client_new(h_options(t, dbl, ""), &c, ERR));
    CHECK_OK(cursor_client_add_tool(c, "ctool", NULL, NULL, on_slow_tool, &s, free_life_state, ERR));
    cursor_agent *a = NULL;
    CHECK_OK(cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, ERR));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(a, "scenario:tool:ctool", NULL, &r, ERR));
    CHECKF(wait_for(&s.running, 1, 10000), "the tool was never called");
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.running), 0);
    CHECK_INT(atomic_load(&s.freed), 1);
    CHECK_INT(atomic_load(&s.freed_while_running), 0);
    cursor_run_free(r);
    cursor_agent_free(a);
    CHECK_INT(atomic_load(&s.freed), 1);
    h_tmp_free(t);
}

/* ---- store (real bridge) ---- */

#define MAX_AGENTS 16
typedef struct {
    pthread_mutex_t lock;
    char ids[MAX_AGENTS][64];
    char *rows[MAX_AGENTS];
    int n;
    atomic_int calls;
    atomic_int freed;
    bool fail_create;
} store_state;

static int store_find(store_state *s, const char *id) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0) return i;
    return -1;
}

/* Extracts the object value of `"key":{...}` (balanced braces; enough for the store's inputs). */
static char *json_object_at(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":{", key);
    const char *p = strstr(json, pat);
    if (!p) return NULL;
    p += strlen(pat) - 1;
    int depth = 0;
    bool in_str = false;
    for (const char *q = p; *q; q++) {
        if (in_str) {
            if (*q == '\\' && q[1]) q++;
            else if (*q == '"') in_str = false;
        } else if (*q == '"') in_str = true;
        else if (*q == '{') depth++;
        else if (*q == '}' && --depth == 0) {
            size_t n = (size_t)(q - p + 1);
            char *out = (char *)malloc(n + 1);
            memcpy(out, p, n);
            out[n] = 0;
            return out;
        }
    }
    return NULL;
}

static void on_store(void *user_data, const char *substore, const char *method, const char *input,
                     cursor_store_reply *reply) {
    store_state *s = (store_state *)user_data;
    atomic_fetch_add(&s->calls, 1);
    char id[64] = "";
    pthread_mutex_lock(&s->lock);
    if (strcmp(substore, "agents") == 0 && (strcmp(method, "create") == 0 || strcmp(method, "update") == 0)) {
        if (s->fail_create && strcmp(method, "create") == 0) {
            pthread_mutex_unlock(&s->lock);
            cursor_store_reply_error(reply, "disk on fire", NULL);
            return;
        }
        char *row = json_object_at(input, "agent");
        if (row && h_json_str(row, "agentId", id, sizeof id)) {
            int i = store_find(s, id);
            if (i < 0 && s->n < MAX_AGENTS) {
                i = s->n++;
                snprintf(s->ids[i], sizeof s->ids[i], "%s", id);
            } else if (i >= 0) {
                free(s->rows[i]);
            }
            if (i >= 0) s->rows[i] = row, row = NULL;
        }
        int i = store_find(s, id);
        cursor_store_reply_ok(reply, i >= 0 ? s->rows[i] : NULL, NULL);
        free(row);
    } else if (strcmp(substore, "agents") == 0 && strcmp(method, "get") == 0) {
        h_json_str(input, "agentId", id, sizeof id);
        int i = store_find(s, id);
        cursor_store_reply_ok(reply, i >= 0 ? s->rows[i] : NULL, NULL);
    } else if (strcmp(method, "list") == 0) {
        if (strcmp(substore, "agents") == 0) {
            size_t cap = 64;
            for (int i = 0; i < s->n; i++) cap += strlen(s->rows[i]) + 1;
            char *out = (char *)malloc(cap);
            strcpy(out, "{\"items\":[");
            for (int i = 0; i < s->n; i++) {
                if (i) strcat(out, ",");
                strcat(out, s->rows[i]);
            }
            strcat(out, "]}");
            cursor_store_reply_ok(reply, out, NULL);
            free(out);
        } else {
            cursor_store_reply_ok(reply, "{\"items\":[]}", NULL);
        }
    } else if (strcmp(substore, "runs") == 0 && (strcmp(method, "create") == 0 || strcmp(method, "update") == 0)) {
        char *row = json_object_at(input, "run");
        cursor_store_reply_ok(reply, row, NULL);
        free(row);
    } else {
        cursor_store_reply_ok(reply, NULL, NULL); /* null result */
    }
    pthread_mutex_unlock(&s->lock);
    /* A second reply is refused, not a crash. */
    cursor_error *e = NULL;
    if (cursor_store_reply_ok(reply, NULL, &e) != CURSOR_E_USAGE) h_fail(__FILE__, __LINE__, "second reply accepted");
    cursor_error_free(e);
}

static void free_store_state(void *user_data) {
    store_state *s = (store_state *)user_data;
    for (int i = 0; i < s->n; i++) free(s->rows[i]);
    s->n = 0;
    atomic_fetch_add(&s->freed, 1);
}

TEST(custom_store_carries_agents_on_the_real_bridge) {
    const char *real = h_env("CURSOR_SDK_TEST_REAL_BRIDGE");
    CHECK(real);
    h_env_t *t = h_tmp_new();
    store_state s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new_with_store(h_options(t, real, ""), on_store, &s, free_store_state, &c, ERR));
    cursor_agent *a = NULL;
    CHECK_OK(cursor_agent_create(c, "{\"model\":\"composer-2\",\"name\":\"kept-in-C\"}", &a, ERR));
    CHECK(store_find(&s, cursor_agent_id(a)) >= 0);
    char *info = NULL;
    CHECK_OK(cursor_agent_info(a, &info, ERR));
    CHECK_CONTAINS(info, "kept-in-C");
    cursor_string_free(info);
    char *page = NULL;
    CHECK_OK(cursor_client_list_agents(c, NULL, &page, ERR));
    CHECK_CONTAINS(page, cursor_agent_id(a));
    cursor_string_free(page);
    CHECK_OK(cursor_agent_archive(a, ERR));
    CHECK(atomic_load(&s.calls) >= 8);
    cursor_agent_free(a);
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1);
    pthread_mutex_destroy(&s.lock);
    h_tmp_free(t);
}

TEST(custom_store_failure_is_a_clear_error) {
    const char *real = h_env("CURSOR_SDK_TEST_REAL_BRIDGE");
    CHECK(real);
    h_env_t *t = h_tmp_new();
    store_state s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    s.fail_create = true;
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new_with_store(h_options(t, real, ""), on_store, &s, free_store_state, &c, ERR));
    cursor_agent *a = NULL;
    cursor_error *e = NULL;
    CHECK_INT(cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, &e), CURSOR_E_INTERNAL);
    CHECK_CONTAINS(cursor_error_message(e), "disk on fire");
    cursor_error_free(e);
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1);
    /* Misuse: no callback, attach mode, NULL out. */
    CHECK_ST(cursor_client_new_with_store(NULL, NULL, &s, free_store_state, &c, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_new_with_store("{\"bridgeUrl\":\"http://127.0.0.1:1\",\"bridgeToken\":\"t\"}", on_store, &s,
                                          free_store_state, &c, ERR),
             CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_new_with_store(NULL, on_store, &s, free_store_state, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_INT(atomic_load(&s.freed), 1); /* failed creations leave user_data with the caller */
    CHECK_ST(cursor_store_reply_ok(NULL, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_store_reply_error(NULL, "x", ERR), CURSOR_E_INVALID_ARGUMENT);
    pthread_mutex_destroy(&s.lock);
    h_tmp_free(t);
}

TEST(custom_store_is_released_at_client_free_while_an_agent_lives) {
    const char *real = h_env("CURSOR_SDK_TEST_REAL_BRIDGE");
    CHECK(real);
    h_env_t *t = h_tmp_new();
    store_state s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new_with_store(h_options(t, real, ""), on_store, &s, free_store_state, &c, ERR));
    cursor_agent *a = NULL;
    CHECK_OK(cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, ERR));
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1);
    cursor_agent_free(a);
    CHECK_INT(atomic_load(&s.freed), 1);
    pthread_mutex_destroy(&s.lock);
    h_tmp_free(t);
}

/* ---- the log callback's user data ---- */

typedef struct {
    atomic_int calls;
    atomic_int running;
    atomic_int freed;
    atomic_int freed_while_running;
    bool remove_itself;
} log_state;

static void on_log(void *user_data, cursor_log_level level, const char *message) {
    (void)level;
    (void)message;
    log_state *s = (log_state *)user_data;
    atomic_fetch_add(&s->running, 1);
    atomic_fetch_add(&s->calls, 1);
    if (s->remove_itself) {
        cursor_set_log_callback(CURSOR_LOG_DEBUG, NULL, NULL, NULL); /* must not deadlock */
        if (atomic_load(&s->freed) != 0) h_fail(__FILE__, __LINE__, "freed during its own call");
    } else {
        h_sleep_ms(300);
    }
    atomic_fetch_sub(&s->running, 1);
}

static void free_log_state(void *user_data) {
    log_state *s = (log_state *)user_data;
    if (atomic_load(&s->running) > 0) atomic_fetch_add(&s->freed_while_running, 1);
    atomic_fetch_add(&s->freed, 1);
}

static void *ping_client(void *arg) {
    cursor_client_ping((cursor_client *)arg, NULL);
    return NULL;
}

TEST(log_callback_replacement_waits_for_calls_and_frees_user_data_once) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    log_state s = {0};
    cursor_set_log_callback(CURSOR_LOG_DEBUG, on_log, &s, free_log_state);
    cursor_client *c = NULL;
    /* verbose: the double's stderr line for each request arrives as a debug line */
    CHECK_OK(cursor_client_new(h_options(t, dbl, "\"verbose\":true"), &c, ERR));
    pthread_t th;
    pthread_create(&th, NULL, ping_client, c);
    CHECKF(wait_for(&s.running, 1, 10000), "no log line arrived");
    cursor_set_log_callback(CURSOR_LOG_DEBUG, NULL, NULL, NULL);
    CHECK_INT(atomic_load(&s.running), 0);
    CHECK_INT(atomic_load(&s.freed), 1);
    CHECK_INT(atomic_load(&s.freed_while_running), 0);
    pthread_join(th, NULL);
    int calls = atomic_load(&s.calls);
    cursor_client_ping(c, NULL);
    CHECK_INT(atomic_load(&s.calls), calls); /* removed: no more calls */

    /* A callback removing itself: no deadlock; its user data is freed as its call returns. */
    log_state self = {0};
    self.remove_itself = true;
    cursor_set_log_callback(CURSOR_LOG_DEBUG, on_log, &self, free_log_state);
    CHECK_OK(cursor_client_ping(c, ERR));
    CHECKF(wait_for(&self.freed, 1, 10000), "the self-removing callback was not freed");
    CHECK_INT(atomic_load(&self.calls), 1);
    CHECK_INT(atomic_load(&self.freed_while_running), 0);
    cursor_client_free(c);
    CHECK_INT(atomic_load(&s.freed), 1);
    h_tmp_free(t);
}

static const h_test TESTS[] = {
    T(tool_answers_now),
    T(tool_answers_later_from_another_thread),
    T(tool_failure_reaches_the_model_and_the_run_goes_on),
    T(tool_scalar_result_is_wrapped),
    T(tool_registration_misuse),
    T(fifty_concurrent_tool_calls),
    T(custom_store_carries_agents_on_the_real_bridge),
    T(custom_store_failure_is_a_clear_error),
    T(client_free_waits_for_a_running_tool_and_frees_it_while_an_agent_lives),
    T(custom_store_is_released_at_client_free_while_an_agent_lives),
    T(log_callback_replacement_waits_for_calls_and_frees_user_data_once),
};

int main(int argc, char **argv) { return h_main(TESTS, H_COUNT(TESTS), argc, argv); }
