/*
 * The C ABI against the bridge double (CURSOR_SDK_TEST_DOUBLE): the whole flow, every error
 * path, misuse (NULL everywhere, bad UTF-8, bad JSON, unknown keys), threads, polling, the wake
 * fd, push mode, a dying bridge and the log callback.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static const char *double_bin(void) { return h_env("CURSOR_SDK_TEST_DOUBLE"); }

/* The `scenario:normal` sequence (deltas and steps off): kind, type, offset. */
static const struct {
    int kind;
    const char *type;
} NORMAL[] = {
    {CURSOR_EVENT_MESSAGE, "system"},    {CURSOR_EVENT_MESSAGE, "status"},    {CURSOR_EVENT_MESSAGE, "thinking"},
    {CURSOR_EVENT_MESSAGE, "assistant"}, {CURSOR_EVENT_MESSAGE, "assistant"}, {CURSOR_EVENT_MESSAGE, "assistant"},
    {CURSOR_EVENT_MESSAGE, "assistant"}, {CURSOR_EVENT_MESSAGE, "assistant"}, {CURSOR_EVENT_MESSAGE, "tool_call"},
    {CURSOR_EVENT_MESSAGE, "tool_call"}, {CURSOR_EVENT_MESSAGE, "usage"},     {CURSOR_EVENT_MESSAGE, "status"},
    {CURSOR_EVENT_RESULT, "result"},
};
#define NORMAL_N ((int)H_COUNT(NORMAL))
#define NORMAL_TEXT "Hello from the bridge double."

/* ------------------------------------------------------------------------------------------ */

TEST(version_and_status_names) {
    CHECK_STR(cursor_sdk_version(), CURSOR_SDK_VERSION);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", CURSOR_SDK_VERSION_MAJOR, CURSOR_SDK_VERSION_MINOR, CURSOR_SDK_VERSION_PATCH);
    CHECK_STR(v, CURSOR_SDK_VERSION);
    CHECK_STR(cursor_status_name(CURSOR_OK), "ok");
    CHECK_STR(cursor_status_name(CURSOR_TIMEOUT), "timeout");
    CHECK_STR(cursor_status_name(CURSOR_END), "end");
    CHECK_STR(cursor_status_name(CURSOR_E_NOT_FOUND), "not_found");
    CHECK_STR(cursor_status_name(CURSOR_E_BRIDGE_EXITED), "bridge_exited");
    CHECK_STR(cursor_status_name(CURSOR_E_USAGE), "usage");
    CHECK_STR(cursor_status_name(12345), "unknown");
    CHECK_STR(cursor_status_name(CURSOR_E_DEADLINE), "deadline");
    CHECK_STR(cursor_status_name(CURSOR_E_STALE_RUN), "stale_run");
    CHECK_STR(cursor_status_name(-20), "unknown");
    CHECK_INT(cursor_sdk_version_number(), CURSOR_SDK_VERSION_NUMBER);
    CHECK_INT(CURSOR_SDK_VERSION_NUMBER,
              CURSOR_SDK_VERSION_MAJOR * 10000 + CURSOR_SDK_VERSION_MINOR * 100 + CURSOR_SDK_VERSION_PATCH);
    for (int s = -19; s <= 2; s++) {
        CHECK(cursor_status_name(s) != NULL);
        CHECKF(strcmp(cursor_status_name(s), "unknown") != 0, "status %d has no name", s);
    }
}

TEST(client_ping_version) {
    h_env_t *t = h_tmp_new();
    const char *bin = double_bin();
    CHECK(bin);
    cursor_client *c = (cursor_client *)(uintptr_t)1;
    cursor_error *e = (cursor_error *)(uintptr_t)1; /* success must set *err to NULL */
    CHECK_INT(cursor_client_new(h_options(t, bin, ""), &c, &e), CURSOR_OK);
    CHECK(e == NULL);
    CHECK(c != NULL);
    e = (cursor_error *)(uintptr_t)1;
    CHECK_INT(cursor_client_ping(c, &e), CURSOR_OK);
    CHECK(e == NULL);
    CHECK_OK(cursor_client_start(c, ERR)); /* idempotent */
    CHECK_OK(cursor_client_ping(c, NULL));
    char *json = (char *)(uintptr_t)1;
    CHECK_OK(cursor_client_version(c, &json, ERR));
    CHECK_CONTAINS(json, "\"bridgeVersion\"");
    CHECK_CONTAINS(json, "\"protocolVersion\"");
    CHECK_CONTAINS(json, "\"capabilities\"");
    cursor_string_free(json);
    cursor_client_free(c);
    h_tmp_free(t);
}

TEST(eager_client_starts_now) {
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new(h_options(t, double_bin(), "\"eager\":true,\"startupTimeoutMs\":20000"), &c, ERR));
    double s = h_now_ms();
    CHECK_OK(cursor_client_ping(c, ERR));
    CHECKF(h_now_ms() - s < 2000, "ping after an eager start took %.0f ms", h_now_ms() - s);
    cursor_client_free(c);
    h_tmp_free(t);
}

TEST(normal_flow_poll) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    const char *aid = cursor_agent_id(f.agent);
    CHECK(aid && *aid);
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    CHECK(r != NULL);
    const char *rid = cursor_run_id(r);
    CHECK(rid && *rid);
    CHECK(cursor_run_id(r) == rid); /* stable pointer */
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    CHECK_INT(d->end_status, CURSOR_END);
    CHECK_INT(d->n, NORMAL_N);
    for (int i = 0; i < NORMAL_N; i++) {
        CHECKF(d->kinds[i] == NORMAL[i].kind && strcmp(d->types[i], NORMAL[i].type) == 0,
               "event %d: kind %d type %s, want kind %d type %s", i, d->kinds[i], d->types[i], NORMAL[i].kind,
               NORMAL[i].type);
        char off[16];
        snprintf(off, sizeof off, "%d", i + 1);
        CHECK_STR(d->offsets[i], off);
    }
    CHECK_STR(d->text, NORMAL_TEXT);
    /* END is sticky, and polling after it never blocks. */
    cursor_event *ev = (cursor_event *)(uintptr_t)1;
    CHECK_INT(cursor_run_next_event(r, -1, &ev, NULL), CURSOR_END);
    CHECK(ev == NULL);
    CHECK_INT(cursor_run_next_event(r, 0, &ev, NULL), CURSOR_END);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_FINISHED);
    char *text = NULL;
    CHECK_OK(cursor_run_text(r, &text, ERR));
    CHECK_STR(text, NORMAL_TEXT);
    cursor_string_free(text);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, -1, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"finished\"");
    CHECK_CONTAINS(res, "\"text\":\"" NORMAL_TEXT "\"");
    cursor_string_free(res);
    cursor_run_free(r);
    free(d);
    fx_close(&f);
}

TEST(event_accessors) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    int seen_assistant = 0, seen_result = 0;
    for (;;) {
        cursor_event *ev = NULL;
        int st = cursor_run_next_event(r, 10000, &ev, NULL);
        if (st == CURSOR_END) break;
        CHECK_INT(st, CURSOR_OK);
        const char *type = cursor_event_type(ev), *json = cursor_event_json(ev);
        CHECK(type && json && json[0] == '{');
        if (strcmp(type, "assistant") == 0 && !seen_assistant++) {
            CHECK_STR(cursor_event_text(ev), "Hello");
            CHECK_CONTAINS(json, "\"content\"");
        } else if (strcmp(type, "result") == 0) {
            seen_result++;
            CHECK_INT(cursor_event_kind(ev), CURSOR_EVENT_RESULT);
        } else if (strcmp(type, "status") == 0) {
            CHECK(cursor_event_text(ev) == NULL);
        }
        cursor_event_free(ev);
    }
    CHECK_INT(seen_assistant, 5);
    CHECK_INT(seen_result, 1);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(wait_result_json) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "{\"text\":\"scenario:normal\"}", NULL, &r, ERR)); /* UserMessage JSON */
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, 20000, &res, ERR));
    char buf[256];
    CHECK(h_json_str(res, "runId", buf, sizeof buf));
    CHECK_STR(buf, cursor_run_id(r));
    CHECK(h_json_str(res, "agentId", buf, sizeof buf));
    CHECK_STR(buf, cursor_agent_id(f.agent));
    CHECK(h_json_str(res, "status", buf, sizeof buf));
    CHECK_STR(buf, "finished");
    CHECK(h_json_str(res, "text", buf, sizeof buf));
    CHECK_STR(buf, NORMAL_TEXT);
    CHECK_CONTAINS(res, "composer-2");
    CHECK_CONTAINS(res, "\"durationMs\"");
    CHECK_CONTAINS(res, "\"usage\"");
    CHECK_CONTAINS(res, "double/");
    cursor_string_free(res);
    /* wait again: same answer, and NULL result pointer is allowed. */
    CHECK_OK(cursor_run_wait(r, 0, NULL, ERR));
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_FINISHED);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(deltas_and_steps) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", "{\"enableDeltas\":true,\"enableSteps\":true}", &r, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    CHECK_INT(d->end_status, CURSOR_END);
    CHECK_INT(d->n, 26); /* offsets 1..27, the 27th is `done` */
    int deltas = 0, steps = 0, text_deltas = 0;
    for (int i = 0; i < d->n; i++) {
        deltas += d->kinds[i] == CURSOR_EVENT_DELTA;
        steps += d->kinds[i] == CURSOR_EVENT_STEP;
        text_deltas += strcmp(d->types[i], "text-delta") == 0;
    }
    CHECK_INT(text_deltas, 5);
    CHECK(deltas >= 9);
    CHECK_INT(steps, 3);
    CHECK_INT(d->kinds[d->n - 1], CURSOR_EVENT_RESULT);
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(failing_run) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:fail", NULL, &r, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    CHECK_INT(d->end_status, CURSOR_END); /* a failed turn is a normal stream */
    CHECK_INT(d->n, 3);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_ERROR);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, -1, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"error\"");
    CHECK_CONTAINS(res, "scripted failure");
    cursor_string_free(res);
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(cancel_run) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    int got = 0;
    while (got < 4) {
        cursor_event *ev = NULL;
        CHECK_OK(cursor_run_next_event(r, 5000, &ev, ERR));
        cursor_event_free(ev);
        got++;
    }
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_RUNNING);
    double s = h_now_ms();
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK_OK(cursor_run_cancel(r, ERR)); /* idempotent */
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    CHECKF(h_now_ms() - s < 2000 * h_scale(), "cancel took %.0f ms to end the stream", h_now_ms() - s);
    CHECK_INT(d->end_status, CURSOR_END);
    CHECK(d->n >= 1);
    CHECK_STR(d->types[d->n - 1], "result");
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_CANCELLED);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, -1, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"cancelled\"");
    cursor_string_free(res);
    CHECK_OK(cursor_run_cancel(r, ERR)); /* on a finished run: a no-op */
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(wait_timeout_then_cancel) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    char *res = (char *)(uintptr_t)1;
    double s = h_now_ms();
    cursor_error *te = (cursor_error *)(uintptr_t)1;
    CHECK_INT(cursor_run_wait(r, 150, &res, &te), CURSOR_TIMEOUT); /* the same status as next_event */
    CHECK(te == NULL); /* not an error */
    CHECK(res == NULL);
    CHECKF(h_now_ms() - s < 2000, "wait(150) took %.0f ms", h_now_ms() - s);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_RUNNING); /* the run goes on */
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"cancelled\"");
    cursor_string_free(res);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(busy_agent) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL, *r2 = (cursor_run *)(uintptr_t)1;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    cursor_error *e = NULL;
    CHECK_INT(cursor_agent_send(f.agent, "scenario:normal", NULL, &r2, &e), CURSOR_E_BUSY);
    CHECK(r2 == NULL);
    CHECK(e != NULL);
    CHECK_INT(cursor_error_kind(e), CURSOR_E_BUSY);
    CHECK_CONTAINS(cursor_error_message(e), "active run");
    CHECK(cursor_error_connect_code(e) != NULL);
    cursor_error_free(e);
    CHECK_INT(cursor_agent_send(f.agent, "scenario:normal", NULL, &r2, NULL), CURSOR_E_BUSY); /* NULL err */
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    cursor_run_free(r);
    /* Free again: a new send works once the run is over. */
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r2, ERR));
    CHECK_OK(cursor_run_wait(r2, 10000, NULL, ERR));
    cursor_run_free(r2);
    fx_close(&f);
}

/* ---- error objects ---- */

TEST(error_accessors_not_found) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_error *e = NULL;
    char *json = (char *)(uintptr_t)1;
    CHECK_INT(cursor_client_get_agent(f.client, "agent-00000000-0000-0000-0000-000000000000", NULL, &json, &e),
              CURSOR_E_NOT_FOUND);
    CHECK(json == NULL);
    CHECK(e != NULL);
    CHECK_INT(cursor_error_kind(e), CURSOR_E_NOT_FOUND);
    CHECK_CONTAINS(cursor_error_message(e), "not");
    CHECK_STR(cursor_error_connect_code(e), "not_found");
    CHECK(cursor_error_sdk_code(e) != 0);
    CHECK_INT(cursor_error_http_status(e), 404);
    CHECK(!cursor_error_retryable(e));
    CHECK_INT(cursor_error_retry_after_ms(e), -1);
    uint64_t l = 7, rem = 7, reset = 7;
    CHECK(!cursor_error_rate_limit(e, &l, &rem, &reset));
    CHECK(!cursor_error_rate_limit(e, NULL, NULL, NULL));
    (void)cursor_error_request_id(e);
    (void)cursor_error_help_url(e);
    (void)cursor_error_provider(e);
    cursor_error_free(e);

    /* The table of unknown ids (bridge quirks mapped to the right kind). */
    CHECK_ST(cursor_client_archive_agent(f.client, "agent-nope", NULL, ERR), CURSOR_E_NOT_FOUND);
    CHECK_ST(cursor_client_get_run(f.client, "run-nope", NULL, &json, ERR), CURSOR_E_NOT_FOUND);
    CHECK_ST(cursor_client_run_conversation(f.client, "run-nope", &json, ERR), CURSOR_E_NOT_FOUND);
    cursor_agent *a = NULL;
    CHECK_ST(cursor_agent_resume(f.client, "agent-nope", "{\"model\":\"composer-2\"}", &a, ERR), CURSOR_E_NOT_FOUND);
    CHECK(a == NULL);
    fx_close(&f);
}

TEST(error_accessors_local_errors) {
    cursor_client *c = (cursor_client *)(uintptr_t)1;
    cursor_error *e = NULL;
    CHECK_INT(cursor_client_new("{\"bridgePathh\":\"/x\"}", &c, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK(c == NULL);
    CHECK_INT(cursor_error_kind(e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "bridgePathh");
    CHECK(cursor_error_connect_code(e) == NULL);
    CHECK_INT(cursor_error_sdk_code(e), 0);
    CHECK_INT(cursor_error_http_status(e), 0);
    CHECK(!cursor_error_retryable(e));
    CHECK(cursor_error_request_id(e) == NULL);
    cursor_error_free(e);
    /* A bridge that does not exist. */
    h_env_t *t = h_tmp_new();
    CHECK_OK(cursor_client_new(h_options(t, "/nonexistent/cursor-sdk-bridge", ""), &c, ERR));
    CHECK_INT(cursor_client_ping(c, &e), CURSOR_E_BRIDGE_START_FAILED);
    CHECK_CONTAINS(cursor_error_message(e), "/nonexistent/cursor-sdk-bridge");
    cursor_error_free(e);
    cursor_client_free(c);
    /* eager: the failure comes from cursor_client_new, *out stays NULL. */
    c = (cursor_client *)(uintptr_t)1;
    CHECK_INT(cursor_client_new(h_options(t, "/nonexistent/cursor-sdk-bridge", "\"eager\":true"), &c, &e),
              CURSOR_E_BRIDGE_START_FAILED);
    CHECK(c == NULL);
    cursor_error_free(e);
    /* A model outside the catalog. */
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_agent *a = (cursor_agent *)(uintptr_t)1;
    CHECK_INT(cursor_agent_create(f.client, "{\"model\":\"no-such-model\"}", &a, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK(a == NULL);
    CHECK_CONTAINS(cursor_error_message(e), "no-such-model");
    CHECK(cursor_error_connect_code(e) != NULL);
    CHECK_INT(cursor_error_http_status(e), 400);
    cursor_error_free(e);
    fx_close(&f);
    h_tmp_free(t);
}

/* ---- management ---- */

TEST(management_calls) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    char rid[128];
    snprintf(rid, sizeof rid, "%s", cursor_run_id(r));
    cursor_run_free(r);
    const char *aid = cursor_agent_id(f.agent);
    char *j = NULL;
    CHECK_OK(cursor_agent_info(f.agent, &j, ERR));
    CHECK_CONTAINS(j, aid);
    cursor_string_free(j);
    CHECK_OK(cursor_client_get_agent(f.client, aid, NULL, &j, ERR));
    CHECK_CONTAINS(j, aid);
    cursor_string_free(j);
    CHECK_OK(cursor_agent_messages(f.agent, "{\"limit\":10}", &j, ERR));
    CHECK(j && j[0] == '[');
    cursor_string_free(j);
    CHECK_OK(cursor_agent_artifacts(f.agent, &j, ERR));
    CHECK_CONTAINS(j, "report.txt");
    cursor_string_free(j);
    uint8_t *data = NULL;
    size_t len = 0;
    CHECK_OK(cursor_agent_download_artifact(f.agent, "artifacts/report.txt", &data, &len, ERR));
    CHECK_INT(len, 100000);
    CHECK(data != NULL);
    cursor_bytes_free(data, len);
    CHECK_OK(cursor_agent_usage(f.agent, NULL, &j, ERR));
    cursor_string_free(j);
    CHECK_OK(cursor_agent_usage(f.agent, rid, &j, ERR));
    cursor_string_free(j);
    CHECK_OK(cursor_client_list_runs(f.client, aid, "{\"limit\":5}", &j, ERR));
    CHECK_CONTAINS(j, rid);
    cursor_string_free(j);
    CHECK_OK(cursor_client_get_run(f.client, rid, NULL, &j, ERR));
    CHECK_CONTAINS(j, rid);
    cursor_string_free(j);
    CHECK_OK(cursor_client_run_conversation(f.client, rid, &j, ERR));
    CHECK(j != NULL);
    cursor_string_free(j);
    CHECK_OK(cursor_agent_reload(f.agent, ERR));
    CHECK_OK(cursor_agent_close(f.agent, ERR));
    cursor_agent *again = NULL;
    CHECK_OK(cursor_agent_resume(f.client, aid, "{\"model\":\"composer-2\"}", &again, ERR));
    CHECK_STR(cursor_agent_id(again), aid);
    CHECK_OK(cursor_agent_archive(f.agent, ERR));
    CHECK_OK(cursor_client_get_agent(f.client, aid, NULL, &j, ERR));
    CHECK_CONTAINS(j, "\"archived\":true");
    cursor_string_free(j);
    {
        cursor_error *e = NULL;
        CHECK(cursor_agent_send(again, "scenario:normal", NULL, &r, &e) < 0);
        printf("  send on an archived agent: %s (%s)\n", cursor_status_name(cursor_error_kind(e)), h_msg(e));
        cursor_error_free(e);
    }
    CHECK_OK(cursor_client_list_agents(f.client, "{\"includeArchived\":true}", &j, ERR));
    CHECK_CONTAINS(j, aid);
    cursor_string_free(j);
    CHECK_OK(cursor_agent_unarchive(again, ERR));
    CHECK_OK(cursor_client_archive_agent(f.client, aid, NULL, ERR));
    CHECK_OK(cursor_client_unarchive_agent(f.client, aid, "{}", ERR));
    CHECK_OK(cursor_agent_delete(again, ERR));
    CHECK_ST(cursor_client_get_agent(f.client, aid, NULL, &j, ERR), CURSOR_E_NOT_FOUND);
    cursor_agent_free(again);
    /* delete by id */
    cursor_agent *b = NULL;
    CHECK_OK(cursor_agent_create(f.client, "{\"model\":\"composer-2\",\"name\":\"second\"}", &b, ERR));
    CHECK_OK(cursor_client_delete_agent(f.client, cursor_agent_id(b), NULL, ERR));
    CHECK_ST(cursor_agent_info(b, &j, ERR), CURSOR_E_NOT_FOUND);
    cursor_agent_free(b);
    /* catalog calls with the client's key (canned data in the double) */
    CHECK_OK(cursor_client_me(f.client, NULL, &j, ERR));
    cursor_string_free(j);
    CHECK_OK(cursor_client_models(f.client, "other-key", &j, ERR));
    CHECK(j && j[0] == '[');
    cursor_string_free(j);
    CHECK_OK(cursor_client_repositories(f.client, NULL, &j, ERR));
    cursor_string_free(j);
    fx_close(&f);
}

TEST(list_agents_paging) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    enum { N = 5 };
    char ids[N + 1][128];
    snprintf(ids[0], sizeof ids[0], "%s", cursor_agent_id(f.agent));
    for (int i = 1; i <= N - 1; i++) {
        cursor_agent *a = NULL;
        CHECK_OK(cursor_agent_create(f.client, "{\"model\":\"composer-2\"}", &a, ERR));
        snprintf(ids[i], sizeof ids[i], "%s", cursor_agent_id(a));
        cursor_agent_free(a);
    }
    char cursor[1024] = "";
    int seen[N] = {0}, pages = 0, total = 0;
    for (;;) {
        char opts[1200];
        if (*cursor)
            snprintf(opts, sizeof opts, "{\"limit\":2,\"cursor\":\"%s\"}", cursor);
        else
            snprintf(opts, sizeof opts, "{\"limit\":2}");
        char *page = NULL;
        CHECK_OK(cursor_client_list_agents(f.client, opts, &page, ERR));
        pages++;
        CHECK(h_count(page, "\"agentId\"") <= 2);
        for (int i = 0; i < N; i++) {
            int k = h_count(page, ids[i]);
            seen[i] += k > 0;
            total += k > 0;
        }
        bool more = h_json_str(page, "nextCursor", cursor, sizeof cursor) && *cursor;
        cursor_string_free(page);
        if (!more) break;
        CHECK(pages < 10);
    }
    CHECK_INT(pages, 3);
    CHECK_INT(total, N);
    for (int i = 0; i < N; i++) CHECKF(seen[i] == 1, "agent %s seen on %d pages", ids[i], seen[i]);
    char *page = NULL;
    CHECK_ST(cursor_client_list_agents(f.client, "{\"cursor\":\"not-a-cursor\"}", &page, ERR), CURSOR_E_INTERNAL);
    CHECK(page == NULL);
    fx_close(&f);
}

/* ---- one-shot prompt (default client: CURSOR_SDK_BRIDGE_BIN) ---- */

TEST(prompt_one_shot) {
    const char *bin = getenv("CURSOR_SDK_BRIDGE_BIN");
    CHECKF(bin && *bin, "CURSOR_SDK_BRIDGE_BIN must point to the double (run through `make c-test`)");
    char *text = (char *)(uintptr_t)1;
    CHECK_OK(cursor_prompt("scenario:normal", "{\"model\":\"composer-2\"}", &text, ERR));
    CHECK_STR(text, NORMAL_TEXT);
    cursor_string_free(text);
    cursor_error *e = NULL;
    CHECK_INT(cursor_prompt("scenario:fail", "{\"model\":\"composer-2\"}", &text, &e), CURSOR_E_RUN_FAILED);
    CHECK_INT(cursor_error_kind(e), CURSOR_E_RUN_FAILED);
    CHECK_STR(cursor_status_name(CURSOR_E_RUN_FAILED), "run_failed");
    CHECK(text == NULL);
    CHECK_CONTAINS(cursor_error_message(e), "scripted failure");
    cursor_error_free(e);
    CHECK_INT(cursor_prompt(NULL, NULL, &text, NULL), CURSOR_E_INVALID_ARGUMENT);
    CHECK_INT(cursor_prompt("x", NULL, NULL, NULL), CURSOR_E_INVALID_ARGUMENT);
    CHECK_INT(cursor_prompt("x", "{\"modle\":1}", &text, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "modle");
    cursor_error_free(e);
}

/* ---- misuse ---- */

static int dummy_event_calls;
static void dummy_event_fn(void *ud, const cursor_event *ev, const cursor_error *er) {
    (void)ud;
    (void)ev;
    (void)er;
    dummy_event_calls++;
}

/* `call` must give CURSOR_E_INVALID_ARGUMENT with an error naming `what`, and the same status
 * with a NULL err. `call_noerr` is the same call with err NULL. */
#define MISUSE(what, call_err, call_noerr)                                                         \
    do {                                                                                           \
        cursor_error *e_ = (cursor_error *)(uintptr_t)1;                                           \
        cursor_error **ERRP = &e_;                                                                 \
        int st_ = (int)(call_err);                                                                 \
        (void)ERRP;                                                                                \
        CHECKF(st_ == CURSOR_E_INVALID_ARGUMENT, "%s gave %s", #call_err, cursor_status_name(st_)); \
        CHECKF(e_ != NULL && e_ != (cursor_error *)(uintptr_t)1, "%s: no error object", #call_err); \
        CHECK_INT(cursor_error_kind(e_), CURSOR_E_INVALID_ARGUMENT);                              \
        CHECK_CONTAINS(cursor_error_message(e_), what);                                            \
        cursor_error_free(e_);                                                                     \
        CHECKF((int)(call_noerr) == CURSOR_E_INVALID_ARGUMENT, "%s (err NULL)", #call_noerr);      \
    } while (0)

TEST(misuse_null_everywhere) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_client *c = f.client;
    cursor_agent *a = f.agent;
    cursor_client *oc = NULL;
    cursor_agent *oa = NULL;
    cursor_run *orun = NULL;
    cursor_event *oev = NULL;
    char *s = NULL;
    uint8_t *bytes = NULL;
    size_t n = 0;
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(a, "scenario:normal", NULL, &r, ERR));

    /* frees and infallible calls */
    cursor_string_free(NULL);
    cursor_bytes_free(NULL, 0);
    cursor_bytes_free(NULL, 10);
    cursor_agent_free(NULL);
    cursor_client_free(NULL);
    cursor_error_free(NULL);
    cursor_run_free(NULL);
    cursor_event_free(NULL);
    cursor_client_shutdown(NULL);
    cursor_set_log_callback(CURSOR_LOG_DEBUG, NULL, NULL, NULL);

    /* client */
    MISUSE("out", cursor_client_new(NULL, NULL, ERRP), cursor_client_new("{}", NULL, NULL));
    MISUSE("client", cursor_client_start(NULL, ERRP), cursor_client_start(NULL, NULL));
    MISUSE("client", cursor_client_ping(NULL, ERRP), cursor_client_ping(NULL, NULL));
    MISUSE("client", cursor_client_version(NULL, &s, ERRP), cursor_client_version(NULL, &s, NULL));
    MISUSE("json_out", cursor_client_version(c, NULL, ERRP), cursor_client_version(c, NULL, NULL));
    MISUSE("client", cursor_client_me(NULL, NULL, &s, ERRP), cursor_client_me(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_me(c, NULL, NULL, ERRP), cursor_client_me(c, "k", NULL, NULL));
    MISUSE("client", cursor_client_models(NULL, NULL, &s, ERRP), cursor_client_models(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_models(c, NULL, NULL, ERRP), cursor_client_models(c, NULL, NULL, NULL));
    MISUSE("client", cursor_client_repositories(NULL, NULL, &s, ERRP), cursor_client_repositories(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_repositories(c, NULL, NULL, ERRP), cursor_client_repositories(c, NULL, NULL, NULL));
    MISUSE("agent_id", cursor_client_get_agent(c, NULL, NULL, &s, ERRP), cursor_client_get_agent(c, NULL, NULL, &s, NULL));
    MISUSE("client", cursor_client_get_agent(NULL, "x", NULL, &s, ERRP), cursor_client_get_agent(NULL, "x", NULL, &s, NULL));
    MISUSE("json_out", cursor_client_get_agent(c, "x", NULL, NULL, ERRP), cursor_client_get_agent(c, "x", NULL, NULL, NULL));
    MISUSE("client", cursor_client_list_agents(NULL, NULL, &s, ERRP), cursor_client_list_agents(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_list_agents(c, NULL, NULL, ERRP), cursor_client_list_agents(c, NULL, NULL, NULL));
    MISUSE("agent_id", cursor_client_archive_agent(c, NULL, NULL, ERRP), cursor_client_archive_agent(c, NULL, NULL, NULL));
    MISUSE("client", cursor_client_archive_agent(NULL, "x", NULL, ERRP), cursor_client_archive_agent(NULL, "x", NULL, NULL));
    MISUSE("agent_id", cursor_client_unarchive_agent(c, NULL, NULL, ERRP), cursor_client_unarchive_agent(c, NULL, NULL, NULL));
    MISUSE("agent_id", cursor_client_delete_agent(c, NULL, NULL, ERRP), cursor_client_delete_agent(c, NULL, NULL, NULL));
    MISUSE("agent_id", cursor_client_list_runs(c, NULL, NULL, &s, ERRP), cursor_client_list_runs(c, NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_list_runs(c, "x", NULL, NULL, ERRP), cursor_client_list_runs(c, "x", NULL, NULL, NULL));
    MISUSE("run_id", cursor_client_get_run(c, NULL, NULL, &s, ERRP), cursor_client_get_run(c, NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_get_run(c, "x", NULL, NULL, ERRP), cursor_client_get_run(c, "x", NULL, NULL, NULL));
    MISUSE("run_id", cursor_client_run_conversation(c, NULL, &s, ERRP), cursor_client_run_conversation(c, NULL, &s, NULL));
    MISUSE("json_out", cursor_client_run_conversation(c, "x", NULL, ERRP), cursor_client_run_conversation(c, "x", NULL, NULL));
    MISUSE("prompt", cursor_prompt(NULL, NULL, &s, ERRP), cursor_prompt(NULL, NULL, &s, NULL));
    MISUSE("text_out", cursor_prompt("x", NULL, NULL, ERRP), cursor_prompt("x", NULL, NULL, NULL));

    /* agent */
    MISUSE("client", cursor_agent_create(NULL, NULL, &oa, ERRP), cursor_agent_create(NULL, NULL, &oa, NULL));
    MISUSE("out", cursor_agent_create(c, NULL, NULL, ERRP), cursor_agent_create(c, NULL, NULL, NULL));
    MISUSE("agent_id", cursor_agent_resume(c, NULL, NULL, &oa, ERRP), cursor_agent_resume(c, NULL, NULL, &oa, NULL));
    MISUSE("client", cursor_agent_resume(NULL, "x", NULL, &oa, ERRP), cursor_agent_resume(NULL, "x", NULL, &oa, NULL));
    MISUSE("out", cursor_agent_resume(c, "x", NULL, NULL, ERRP), cursor_agent_resume(c, "x", NULL, NULL, NULL));
    CHECK(cursor_agent_id(NULL) == NULL);
    MISUSE("agent", cursor_agent_send(NULL, "m", NULL, &orun, ERRP), cursor_agent_send(NULL, "m", NULL, &orun, NULL));
    MISUSE("message", cursor_agent_send(a, NULL, NULL, &orun, ERRP), cursor_agent_send(a, NULL, NULL, &orun, NULL));
    MISUSE("out", cursor_agent_send(a, "m", NULL, NULL, ERRP), cursor_agent_send(a, "m", NULL, NULL, NULL));
    MISUSE("agent", cursor_agent_close(NULL, ERRP), cursor_agent_close(NULL, NULL));
    MISUSE("agent", cursor_agent_reload(NULL, ERRP), cursor_agent_reload(NULL, NULL));
    MISUSE("agent", cursor_agent_archive(NULL, ERRP), cursor_agent_archive(NULL, NULL));
    MISUSE("agent", cursor_agent_unarchive(NULL, ERRP), cursor_agent_unarchive(NULL, NULL));
    MISUSE("agent", cursor_agent_delete(NULL, ERRP), cursor_agent_delete(NULL, NULL));
    MISUSE("agent", cursor_agent_info(NULL, &s, ERRP), cursor_agent_info(NULL, &s, NULL));
    MISUSE("json_out", cursor_agent_info(a, NULL, ERRP), cursor_agent_info(a, NULL, NULL));
    MISUSE("agent", cursor_agent_messages(NULL, NULL, &s, ERRP), cursor_agent_messages(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_agent_messages(a, NULL, NULL, ERRP), cursor_agent_messages(a, NULL, NULL, NULL));
    MISUSE("agent", cursor_agent_artifacts(NULL, &s, ERRP), cursor_agent_artifacts(NULL, &s, NULL));
    MISUSE("json_out", cursor_agent_artifacts(a, NULL, ERRP), cursor_agent_artifacts(a, NULL, NULL));
    MISUSE("agent", cursor_agent_usage(NULL, NULL, &s, ERRP), cursor_agent_usage(NULL, NULL, &s, NULL));
    MISUSE("json_out", cursor_agent_usage(a, NULL, NULL, ERRP), cursor_agent_usage(a, NULL, NULL, NULL));
    MISUSE("path", cursor_agent_download_artifact(a, NULL, &bytes, &n, ERRP), cursor_agent_download_artifact(a, NULL, &bytes, &n, NULL));
    MISUSE("agent", cursor_agent_download_artifact(NULL, "p", &bytes, &n, ERRP), cursor_agent_download_artifact(NULL, "p", &bytes, &n, NULL));
    MISUSE("data_out", cursor_agent_download_artifact(a, "p", NULL, &n, ERRP), cursor_agent_download_artifact(a, "p", NULL, &n, NULL));
    MISUSE("len_out", cursor_agent_download_artifact(a, "p", &bytes, NULL, ERRP), cursor_agent_download_artifact(a, "p", &bytes, NULL, NULL));

    /* run */
    MISUSE("run", cursor_run_next_event(NULL, 0, &oev, ERRP), cursor_run_next_event(NULL, 0, &oev, NULL));
    MISUSE("out", cursor_run_next_event(r, 0, NULL, ERRP), cursor_run_next_event(r, 0, NULL, NULL));
    MISUSE("run", cursor_run_wait(NULL, 0, &s, ERRP), cursor_run_wait(NULL, 0, &s, NULL));
    MISUSE("run", cursor_run_cancel(NULL, ERRP), cursor_run_cancel(NULL, NULL));
    CHECK(cursor_run_id(NULL) == NULL);
    CHECK_INT(cursor_run_status(NULL), CURSOR_RUN_INVALID);
    MISUSE("run", cursor_run_text(NULL, &s, ERRP), cursor_run_text(NULL, &s, NULL));
    MISUSE("text_out", cursor_run_text(r, NULL, ERRP), cursor_run_text(r, NULL, NULL));
    MISUSE("run", cursor_run_observe(NULL, NULL, &orun, ERRP), cursor_run_observe(NULL, NULL, &orun, NULL));
    MISUSE("out", cursor_run_observe(r, NULL, NULL, ERRP), cursor_run_observe(r, NULL, NULL, NULL));
    CHECK_INT(cursor_run_wait_fd(NULL), -1);
    MISUSE("run", cursor_run_set_callback(NULL, dummy_event_fn, NULL, ERRP), cursor_run_set_callback(NULL, dummy_event_fn, NULL, NULL));
    MISUSE("fn", cursor_run_set_callback(r, NULL, NULL, ERRP), cursor_run_set_callback(r, NULL, NULL, NULL));

    /* event and error accessors */
    CHECK_INT(cursor_event_kind(NULL), CURSOR_EVENT_INVALID);
    CHECK(cursor_event_type(NULL) == NULL);
    CHECK(cursor_event_json(NULL) == NULL);
    CHECK(cursor_event_text(NULL) == NULL);
    CHECK(cursor_event_offset(NULL) == NULL);
    CHECK_INT(cursor_error_kind(NULL), CURSOR_E_INVALID_ARGUMENT);
    CHECK(cursor_error_message(NULL) == NULL);
    CHECK(cursor_error_connect_code(NULL) == NULL);
    CHECK_INT(cursor_error_sdk_code(NULL), 0);
    CHECK(cursor_error_request_id(NULL) == NULL);
    CHECK_INT(cursor_error_retry_after_ms(NULL), -1);
    CHECK(!cursor_error_rate_limit(NULL, NULL, NULL, NULL));
    CHECK(cursor_error_help_url(NULL) == NULL);
    CHECK(cursor_error_provider(NULL) == NULL);
    CHECK_INT(cursor_error_http_status(NULL), 0);
    CHECK(!cursor_error_retryable(NULL));

    /* out-parameters were cleared, never written with garbage */
    CHECK(oc == NULL && oa == NULL && orun == NULL && oev == NULL && s == NULL && bytes == NULL);
    CHECK_INT(dummy_event_calls, 0);

    /* the run still works after all that: the sequence is intact */
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    CHECK_INT(d->n, NORMAL_N);
    free(d);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(misuse_invalid_utf8) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    const char *bad = "scenario:normal \xc3\x28 \xff";
    cursor_error *e = NULL;
    cursor_run *r = (cursor_run *)(uintptr_t)1;
    CHECK_INT(cursor_agent_send(f.agent, bad, NULL, &r, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_CONTAINS(cursor_error_message(e), "UTF-8");
    cursor_error_free(e);
    cursor_client *c = (cursor_client *)(uintptr_t)1;
    CHECK_INT(cursor_client_new("{\"workspace\":\"\xff\"}", &c, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK(c == NULL);
    CHECK_CONTAINS(cursor_error_message(e), "UTF-8");
    cursor_error_free(e);
    cursor_agent *a = (cursor_agent *)(uintptr_t)1;
    CHECK_INT(cursor_agent_create(f.client, "{\"model\":\"comp\xe2\x82oser\"}", &a, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK(a == NULL);
    CHECK_CONTAINS(cursor_error_message(e), "UTF-8");
    cursor_error_free(e);
    char *s = NULL;
    CHECK_ST(cursor_client_get_agent(f.client, "agent-\x80", NULL, &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_list_agents(f.client, "{\"cwd\":\"\xfe\"}", &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_prompt("\xff", NULL, &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_send(f.agent, "ok", "{\"mode\":\"\xff\"}", &r, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_download_artifact(f.agent, "\xff", (uint8_t **)&s, (size_t *)&e, ERR), CURSOR_E_INVALID_ARGUMENT);
    /* and the agent still works */
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    cursor_run_free(r);
    fx_close(&f);
}

TEST(misuse_malformed_json) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_client *c = NULL;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    char *s = NULL;
    CHECK_ST(cursor_client_new("{", &c, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_new("[]", &c, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_new("{\"startupTimeoutMs\":\"soon\"}", &c, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_create(f.client, "{\"model\":", &a, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_create(f.client, "42", &a, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_send(f.agent, "hi", "[1,2]", &r, ERR), CURSOR_E_INVALID_ARGUMENT);
    /* a message that is a JSON object must be a valid UserMessage (text that merely starts with
     * '{' but is not JSON is sent as plain text, by design) */
    CHECK_ST(cursor_agent_send(f.agent, "{\"text\":\"x\",\"bogus\":1}", NULL, &r, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_list_agents(f.client, "{bad", &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_list_agents(f.client, "{\"limit\":\"two\"}", &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_agent_messages(f.agent, "}", &s, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK(c == NULL && a == NULL && r == NULL && s == NULL);
    fx_close(&f);
}

TEST(misuse_unknown_option_keys) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_client *c = NULL;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    char *s = NULL;
    cursor_error *e = NULL;
    CHECK_INT(cursor_client_new("{\"bridgeEnvv\":{}}", &c, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "bridgeEnvv");
    cursor_error_free(e);
    CHECK_INT(cursor_agent_create(f.client, "{\"model\":\"composer-2\",\"modle\":\"x\"}", &a, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "modle");
    cursor_error_free(e);
    CHECK_INT(cursor_agent_create(f.client, "{\"model\":\"composer-2\",\"local\":{\"cwdd\":\".\"}}", &a, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "local.cwdd");
    cursor_error_free(e);
    CHECK_INT(cursor_agent_send(f.agent, "hi", "{\"enableDeltaz\":true}", &r, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "enableDeltaz");
    cursor_error_free(e);
    CHECK_INT(cursor_client_list_agents(f.client, "{\"limitt\":1}", &s, &e), CURSOR_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(cursor_error_message(e), "limitt");
    cursor_error_free(e);
    CHECK(c == NULL && a == NULL && r == NULL && s == NULL);
    fx_close(&f);
}

/* Values that would break every later call are refused by cursor_client_new, naming the key. */
TEST(misuse_out_of_range_client_options) {
    static const char *const bad[][2] = {
        {"{\"requestTimeoutMs\":0}", "requestTimeoutMs"},
        {"{\"requestTimeoutMs\":18446744073709551615}", "requestTimeoutMs"},
        {"{\"streamIdleTimeoutMs\":0}", "streamIdleTimeoutMs"},
        {"{\"maxFrameBytes\":0}", "maxFrameBytes"},
        {"{\"startupTimeoutMs\":0}", "startupTimeoutMs"},
        {"{\"maxRetries\":11}", "maxRetries"},
        {"{\"bridgeUrl\":\"http://127.0.0.1:99999\",\"bridgeToken\":\"t\"}", "bridgeUrl"},
        {"{\"bridgeUrl\":\"http://127.0.0.1:80\\r\\nX: y\",\"bridgeToken\":\"t\"}", "bridgeUrl"},
        {"{\"bridgeUrl\":\"http://127.0.0.1:80\",\"bridgeToken\":\"a b\"}", "bridgeToken"},
        {"{\"workspace\":\"/no/such/dir/anywhere\"}", "workspace"},
    };
    for (size_t i = 0; i < H_COUNT(bad); i++) {
        cursor_client *c = (cursor_client *)(uintptr_t)1;
        cursor_error *e = NULL;
        CHECKF(cursor_client_new(bad[i][0], &c, &e) == CURSOR_E_INVALID_ARGUMENT, "%s accepted", bad[i][0]);
        CHECK(c == NULL);
        CHECK_CONTAINS(cursor_error_message(e), bad[i][1]);
        cursor_error_free(e);
    }
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new("{\"requestTimeoutMs\":1,\"maxRetries\":10,\"maxFrameBytes\":1024}", &c, ERR));
    cursor_client_free(c);
}

/* ---- fork: the child gets CURSOR_E_USAGE at once and leaves the parent's bridge alone ---- */

TEST(fork_child_gets_usage_and_parent_keeps_its_bridge) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    int fd = cursor_run_wait_fd(r);
    CHECK(fd >= 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        double t0 = h_now_ms();
        cursor_event *ev = NULL;
        int ok = cursor_client_ping(f.client, NULL) == CURSOR_E_USAGE &&
                 cursor_run_next_event(r, -1, &ev, NULL) == CURSOR_E_USAGE &&
                 cursor_run_cancel(r, NULL) == CURSOR_E_USAGE &&
                 cursor_prompt("x", NULL, NULL, NULL) == CURSOR_E_INVALID_ARGUMENT;
        double took = h_now_ms() - t0;
        /* Freeing the inherited handles touches nothing of the parent's; exit runs at-exit hooks. */
        cursor_run_free(r);
        cursor_agent_free(f.agent);
        cursor_client_free(f.client);
        int code = ok && took < 500 * h_scale() ? 0 : 1;
        const char *mode = getenv("CURSOR_SDK_TEST_MODE");
        if (mode && strcmp(mode, "plain") != 0) {
            /* The child leaks the parent's handles by design, which LeakSanitizer and memcheck
             * would report at its exit: leave through exec instead. The at-exit path is covered
             * by the plain run and tests/client_fork.rs. */
            execl("/bin/sh", "sh", "-c", code ? "exit 1" : "exit 0", (char *)NULL);
            _exit(2);
        }
        exit(code); /* at-exit hooks run, as in a real program */
    }
    int status = 0;
    double t0 = h_now_ms();
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (h_now_ms() - t0 > 20000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            CHECKF(0, "the forked child hung");
        }
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
    CHECK_OK(cursor_client_ping(f.client, ERR)); /* the parent's bridge still serves */
    cursor_event *ev = NULL;
    CHECK_OK(cursor_run_next_event(r, 5000, &ev, ERR)); /* and its stream still flows */
    cursor_event_free(ev);
    CHECK_OK(cursor_run_cancel(r, ERR));
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, 10000, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"cancelled\"");
    cursor_string_free(res);
    cursor_run_free(r);
    fx_close(&f);
}

/* ---- use after shutdown ---- */

TEST(client_shutdown_then_usage) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_client_shutdown(f.client);
    cursor_client_shutdown(f.client); /* idempotent */
    CHECK_ST(cursor_client_ping(f.client, ERR), CURSOR_E_USAGE);
    cursor_run *r = NULL;
    CHECK_ST(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR), CURSOR_E_USAGE);
    CHECK(r == NULL);
    fx_close(&f);
}

/* ---- polling: timeout 0, cancel from another thread, the wake fd ---- */

TEST(timeout_zero_never_blocks) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    /* One chunk a second: a call that blocked would take ~1 s, far above scheduling noise. */
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:1000", NULL, &r, ERR));
    double worst = 0, start = h_now_ms();
    int events = 0, timeouts = 0;
    while (h_now_ms() - start < 1500) {
        cursor_event *ev = NULL;
        double s = h_now_ms();
        int st = cursor_run_next_event(r, 0, &ev, NULL);
        double took = h_now_ms() - s;
        if (took > worst) worst = took;
        if (st == CURSOR_OK) {
            events++;
            cursor_event_free(ev);
        } else {
            CHECK_INT(st, CURSOR_TIMEOUT);
            timeouts++;
        }
        h_sleep_ms(1);
    }
    printf("  timeout 0: %d events, %d timeouts, worst call %.3f ms\n", events, timeouts, worst);
    CHECK(events >= 2);
    CHECK(timeouts > 50);
    CHECKF(worst < 250.0 * h_scale(), "cursor_run_next_event(r, 0) took %.3f ms", worst);
    /* a short timeout returns on time */
    double s = h_now_ms();
    cursor_event *ev = NULL;
    while (cursor_run_next_event(r, 0, &ev, NULL) == CURSOR_OK) cursor_event_free(ev);
    s = h_now_ms();
    int st = cursor_run_next_event(r, 30, &ev, NULL);
    if (st == CURSOR_OK) cursor_event_free(ev);
    CHECKF(h_now_ms() - s < 500, "next_event(30) took %.0f ms", h_now_ms() - s);
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    cursor_run_free(r);
    fx_close(&f);
}

typedef struct {
    cursor_run *run;
    int final_status;
    double ended_at;
    int events;
} blocked_reader;

static void *blocked_reader_main(void *p) {
    blocked_reader *b = (blocked_reader *)p;
    for (;;) {
        cursor_event *ev = NULL;
        int st = cursor_run_next_event(b->run, -1, &ev, NULL);
        if (st == CURSOR_OK) {
            b->events++;
            cursor_event_free(ev);
            continue;
        }
        b->final_status = st;
        b->ended_at = h_now_ms();
        return NULL;
    }
}

TEST(cancel_wakes_blocked_next_event) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    /* one assistant chunk every 10 s: the reader is blocked most of the time */
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:10000", NULL, &r, ERR));
    blocked_reader b = {r, 0, 0, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, blocked_reader_main, &b) == 0);
    h_sleep_ms(300);
    double s = h_now_ms();
    CHECK_OK(cursor_run_cancel(r, ERR)); /* from this (another) thread */
    pthread_join(th, NULL);
    double latency = b.ended_at - s;
    printf("  blocked next_event woke %.1f ms after cancel (%d events)\n", latency, b.events);
    CHECK_INT(b.final_status, CURSOR_END);
    CHECKF(latency < 1000 * h_scale(), "a blocked next_event took %.0f ms to wake after cancel", latency);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_CANCELLED);
    cursor_run_free(r);
    fx_close(&f);
}

/* The wake descriptor is close-on-exec from birth and closed by cursor_run_free. */
TEST(wait_fd_cloexec_and_closed_by_free) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:20", NULL, &r, ERR));
    int fd = cursor_run_wait_fd(r);
    CHECK(fd >= 0);
    int flags = fcntl(fd, F_GETFD);
    CHECKF(flags >= 0 && (flags & FD_CLOEXEC), "wake fd flags %d", flags);
    cursor_run_free(r); /* the run still streams: events keep arriving in the library */
    errno = 0;
    CHECKF(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "wake fd %d still open after free", fd);
    fx_close(&f);
}

/* Cancel never blocks, even called every frame. */
TEST(cancel_returns_at_once) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    double worst = 0;
    for (int i = 0; i < 100; i++) {
        double t0 = h_now_ms();
        CHECK_OK(cursor_run_cancel(r, ERR));
        double took = h_now_ms() - t0;
        if (took > worst) worst = took;
    }
    CHECKF(worst < 50 * h_scale(), "a cancel took %.1f ms", worst);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, 10000, &res, ERR));
    CHECK_CONTAINS(res, "\"status\":\"cancelled\"");
    cursor_string_free(res);
    cursor_run_free(r);
    fx_close(&f);
}

TEST(wait_fd_poll) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    int fd = cursor_run_wait_fd(r);
    CHECK(fd >= 0);
    CHECK_INT(cursor_run_wait_fd(r), fd); /* same descriptor every time */
    int events = 0, wakeups = 0;
    bool ended = false;
    while (!ended) {
        struct pollfd p = {fd, POLLIN, 0};
        int k = poll(&p, 1, 5000);
        CHECKF(k == 1 && (p.revents & POLLIN), "wait fd not readable within 5 s (poll %d, %d events)", k, events);
        wakeups++;
        for (;;) {
            cursor_event *ev = NULL;
            int st = cursor_run_next_event(r, 0, &ev, NULL);
            if (st == CURSOR_OK) {
                events++;
                cursor_event_free(ev);
            } else if (st == CURSOR_TIMEOUT) {
                break;
            } else {
                CHECK_INT(st, CURSOR_END);
                ended = true;
                break;
            }
        }
        CHECK(wakeups < 1000);
    }
    CHECK_INT(events, NORMAL_N);
    /* after the end the fd stays readable */
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_INT(poll(&p, 1, 0), 1);
    cursor_run_free(r);

    /* a slow run: after TIMEOUT the fd is re-armed (not readable) until the next event */
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:300", NULL, &r, ERR));
    fd = cursor_run_wait_fd(r);
    CHECK(fd >= 0);
    int rearmed = 0, woke_with_event = 0;
    for (int round = 0; round < 4; round++) {
        struct pollfd q = {fd, POLLIN, 0};
        CHECK_INT(poll(&q, 1, 5000), 1);
        int got = 0;
        for (;;) {
            cursor_event *ev = NULL;
            int st = cursor_run_next_event(r, 0, &ev, NULL);
            if (st != CURSOR_OK) {
                CHECK_INT(st, CURSOR_TIMEOUT);
                break;
            }
            got++;
            cursor_event_free(ev);
        }
        woke_with_event += got > 0;
        q.revents = 0;
        if (poll(&q, 1, 0) == 0) rearmed++;
    }
    CHECK(woke_with_event >= 3);
    CHECK(rearmed >= 3);
    CHECK_OK(cursor_run_cancel(r, ERR));
    /* the end makes it readable */
    bool end = false;
    for (int i = 0; i < 100 && !end; i++) {
        struct pollfd q = {fd, POLLIN, 0};
        CHECK_INT(poll(&q, 1, 5000), 1);
        for (;;) {
            cursor_event *ev = NULL;
            int st = cursor_run_next_event(r, 0, &ev, NULL);
            if (st == CURSOR_OK) {
                cursor_event_free(ev);
                continue;
            }
            end = st == CURSOR_END;
            break;
        }
    }
    CHECK(end);
    cursor_run_free(r);
    fx_close(&f);
}

/* ---- push mode ---- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int events;
    int finals;
    int calls_after_final;
    int final_error_kind; /* 0: NULL error */
    char final_msg[256];
    int kinds[64];
    char types[64][24];
    int bad; /* event and error both set / both NULL on a non-final call */
    /* behaviour knobs */
    int sleep_ms;             /* per event */
    int free_at;              /* free the run from inside the callback at this event (1-based) */
    cursor_run *run;          /* for free_at */
    volatile int in_callback; /* set while an event callback runs */
    double freed_at;
} push_state;

static void push_init(push_state *p) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
}

static void push_destroy(push_state *p) {
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

static void push_fn(void *ud, const cursor_event *ev, const cursor_error *er) {
    push_state *p = (push_state *)ud;
    if (ev) {
        __atomic_store_n(&p->in_callback, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&p->lock);
        if (er) p->bad++;
        if (p->finals) p->calls_after_final++;
        if (p->events < 64) {
            p->kinds[p->events] = (int)cursor_event_kind(ev);
            snprintf(p->types[p->events], sizeof p->types[0], "%s", cursor_event_type(ev));
        }
        int n = ++p->events;
        pthread_mutex_unlock(&p->lock);
        if (p->sleep_ms) h_sleep_ms(p->sleep_ms);
        if (p->free_at && n == p->free_at) {
            cursor_run_cancel(p->run, NULL); /* allowed inside the callback */
            double s = h_now_ms();
            cursor_run_free(p->run); /* returns at once from inside the callback */
            p->freed_at = h_now_ms() - s;
        }
        __atomic_store_n(&p->in_callback, 0, __ATOMIC_SEQ_CST);
        return;
    }
    pthread_mutex_lock(&p->lock);
    if (p->finals) p->calls_after_final++;
    p->finals++;
    p->final_error_kind = er ? (int)cursor_error_kind(er) : 0;
    if (er) snprintf(p->final_msg, sizeof p->final_msg, "%s", h_msg(er));
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static bool push_wait_final(push_state *p, int ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->lock);
    while (!p->finals) {
        if (pthread_cond_timedwait(&p->cond, &p->lock, &until) != 0) break;
    }
    bool done = p->finals > 0;
    pthread_mutex_unlock(&p->lock);
    return done;
}

TEST(push_mode_order) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    push_state *p = (push_state *)malloc(sizeof *p);
    push_init(p);
    CHECK_OK(cursor_run_set_callback(r, push_fn, p, ERR));
    CHECK_ST(cursor_run_set_callback(r, push_fn, p, ERR), CURSOR_E_USAGE); /* second callback */
    CHECK(push_wait_final(p, 10000));
    h_sleep_ms(100); /* nothing may follow the final call */
    pthread_mutex_lock(&p->lock);
    int events = p->events, finals = p->finals, after = p->calls_after_final, bad = p->bad, fk = p->final_error_kind;
    pthread_mutex_unlock(&p->lock);
    CHECK_INT(finals, 1);
    CHECK_INT(after, 0);
    CHECK_INT(bad, 0);
    CHECKF(fk == 0, "final call carried an error: %s", p->final_msg);
    CHECK_INT(events, NORMAL_N);
    for (int i = 0; i < NORMAL_N; i++) {
        CHECKF(p->kinds[i] == NORMAL[i].kind && strcmp(p->types[i], NORMAL[i].type) == 0, "push event %d: %s", i,
               p->types[i]);
    }
    /* polling a push-mode run is a usage error */
    cursor_event *ev = NULL;
    CHECK_ST(cursor_run_next_event(r, 0, &ev, ERR), CURSOR_E_USAGE);
    CHECK_ST(cursor_run_wait(r, 0, NULL, ERR), CURSOR_E_USAGE);
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_FINISHED);
    cursor_run_free(r);
    CHECK_INT(p->finals, 1);
    push_destroy(p);
    free(p);
    fx_close(&f);
}

TEST(push_free_from_other_thread) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:20", NULL, &r, ERR));
    push_state *p = (push_state *)malloc(sizeof *p);
    push_init(p);
    p->sleep_ms = 150;
    CHECK_OK(cursor_run_set_callback(r, push_fn, p, ERR));
    /* wait until a callback is running, then free the run from this thread */
    double s = h_now_ms();
    while (!__atomic_load_n(&p->in_callback, __ATOMIC_SEQ_CST) && h_now_ms() - s < 5000) h_sleep_ms(1);
    CHECK(__atomic_load_n(&p->in_callback, __ATOMIC_SEQ_CST));
    CHECK_OK(cursor_run_cancel(r, ERR));
    s = h_now_ms();
    cursor_run_free(r);
    double took = h_now_ms() - s;
    /* when cursor_run_free returns: no callback runs, the final call was made exactly once */
    CHECK(!__atomic_load_n(&p->in_callback, __ATOMIC_SEQ_CST));
    pthread_mutex_lock(&p->lock);
    int finals = p->finals, events = p->events;
    pthread_mutex_unlock(&p->lock);
    printf("  cursor_run_free during a callback returned after %.1f ms (%d events)\n", took, events);
    CHECK_INT(finals, 1);
    CHECKF(took < 2000 * h_scale(), "cursor_run_free took %.0f ms", took);
    h_sleep_ms(200);
    CHECK_INT(p->events, events); /* nothing after free returned */
    CHECK_INT(p->finals, 1);
    CHECK_INT(p->calls_after_final, 0);
    CHECK(p->final_error_kind == 0 || p->final_error_kind == CURSOR_E_CANCELLED);
    push_destroy(p);
    free(p);
    fx_close(&f);
}

TEST(push_free_from_inside_callback) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:20", NULL, &r, ERR));
    push_state *p = (push_state *)malloc(sizeof *p);
    push_init(p);
    p->free_at = 3;
    p->run = r;
    CHECK_OK(cursor_run_set_callback(r, push_fn, p, ERR));
    CHECK(push_wait_final(p, 10000));
    h_sleep_ms(200);
    printf("  cursor_run_free inside the callback returned after %.3f ms\n", p->freed_at);
    CHECK_INT(p->events, 3);
    CHECK_INT(p->finals, 1);
    CHECK_INT(p->calls_after_final, 0);
    CHECK_INT(p->final_error_kind, CURSOR_E_CANCELLED);
    CHECK(p->freed_at < 100 * h_scale());
    push_destroy(p);
    free(p);
    fx_close(&f);
}

TEST(push_cancel_from_other_thread) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:slow:50", NULL, &r, ERR));
    push_state *p = (push_state *)malloc(sizeof *p);
    push_init(p);
    CHECK_OK(cursor_run_set_callback(r, push_fn, p, ERR));
    h_sleep_ms(200);
    CHECK_OK(cursor_run_cancel(r, ERR));
    CHECK(push_wait_final(p, 5000));
    CHECK_INT(p->final_error_kind, 0); /* the stream ended normally (status cancelled) */
    CHECK_STR(p->types[p->events - 1], "result");
    CHECK_INT(cursor_run_status(r), CURSOR_RUN_CANCELLED);
    cursor_run_free(r);
    CHECK_INT(p->finals, 1);
    push_destroy(p);
    free(p);
    fx_close(&f);
}

/* ---- a bridge that dies mid-run ---- */

TEST(bridge_dies_mid_run) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:die:4", NULL, &r, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(r, d));
    printf("  die:4 -> %d events, then %s: %s\n", d->n, cursor_status_name(d->end_status), d->error_msg);
    CHECK_INT(d->end_status, CURSOR_E_BRIDGE_EXITED);
    CHECK_INT(d->error_kind, CURSOR_E_BRIDGE_EXITED);
    CHECK(d->n <= 4);
    CHECK_INT(d->after_error_status, CURSOR_END); /* the error is reported once */
    free(d);
    char *res = NULL;
    CHECK_OK(cursor_run_wait(r, 5000, &res, ERR));
    printf("  wait after the death: %s\n", res);
    CHECK_CONTAINS(res, "\"status\":\"error\"");
    cursor_string_free(res);
    cursor_run_free(r);
    /* documented: the call that notices fails, the next call starts a fresh bridge */
    CHECK_OK(cursor_client_ping(f.client, ERR));
    fx_close(&f);
}

TEST(bridge_dies_mid_run_push) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:die:4", NULL, &r, ERR));
    push_state *p = (push_state *)malloc(sizeof *p);
    push_init(p);
    CHECK_OK(cursor_run_set_callback(r, push_fn, p, ERR));
    CHECK(push_wait_final(p, 10000));
    CHECKF(p->final_error_kind == CURSOR_E_BRIDGE_EXITED, "final error %d: %s", p->final_error_kind, p->final_msg);
    CHECK(p->events <= 4);
    cursor_run_free(r);
    CHECK_INT(p->finals, 1);
    push_destroy(p);
    free(p);
    fx_close(&f);
}

/* ---- many threads on one client ---- */

typedef struct {
    cursor_client *client;
    int index;
    int ok;
} worker;

static void *worker_main(void *arg) {
    worker *w = (worker *)arg;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    char *s = NULL;
    int events = 0;
    TCHECK(cursor_client_ping(w->client, NULL) == CURSOR_OK);
    TCHECK(cursor_agent_create(w->client, "{\"model\":\"composer-2\"}", &a, NULL) == CURSOR_OK);
    for (int round = 0; round < 2; round++) {
        TCHECK(cursor_agent_send(a, w->index % 2 ? "scenario:normal" : "scenario:long:50", NULL, &r, NULL) ==
               CURSOR_OK);
        for (;;) {
            cursor_event *ev = NULL;
            int st = cursor_run_next_event(r, 20000, &ev, NULL);
            if (st != CURSOR_OK) {
                TCHECK(st == CURSOR_END);
                break;
            }
            events++;
            cursor_event_free(ev);
        }
        TCHECK(cursor_run_status(r) == CURSOR_RUN_FINISHED);
        cursor_run_free(r);
        r = NULL;
    }
    TCHECK(events == (w->index % 2 ? 2 * NORMAL_N : 2 * 55));
    TCHECK(cursor_client_list_agents(w->client, "{\"limit\":3}", &s, NULL) == CURSOR_OK);
    cursor_string_free(s);
    s = NULL;
    TCHECK(cursor_agent_info(a, &s, NULL) == CURSOR_OK);
    w->ok = 1;
out:
    cursor_string_free(s);
    cursor_run_free(r);
    cursor_agent_free(a);
    return NULL;
}

TEST(many_threads_one_client) {
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new(h_options(t, double_bin(), ""), &c, ERR));
    enum { N = 12 };
    pthread_t th[N];
    worker w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (worker){c, i, 0};
        CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += w[i].ok;
    }
    CHECK_INT(ok, N);
    cursor_client_free(c);
    h_tmp_free(t);
}

/* ---- the log callback never sees the token ---- */

static log_capture LOGS = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};

TEST(log_callback_no_token) {
    log_capture_clear(&LOGS);
    cursor_set_log_callback(CURSOR_LOG_DEBUG, log_capture_fn, &LOGS, NULL);
    fixture f;
    CHECK(fx_open(&f, double_bin(), "\"verbose\":true"));
    cursor_run *r = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    cursor_run_free(r);
    char token[128] = "";
    bool have_token = h_read_token(f.tmp, token, sizeof token); /* while the bridge runs */
    fx_close(&f);
    cursor_set_log_callback(CURSOR_LOG_DEBUG, NULL, NULL, NULL);
    pthread_mutex_lock(&LOGS.lock);
    int n = LOGS.n, bad = LOGS.bad_level, leaks = 0, shaped = 0;
    for (int i = 0; i < n; i++) {
        if (strstr(LOGS.lines[i], "Bearer ") || (have_token && strstr(LOGS.lines[i], token))) {
            fprintf(stderr, "  token in log line: %s\n", LOGS.lines[i]);
            leaks++;
        }
        if (has_token_shape(LOGS.lines[i])) {
            fprintf(stderr, "  token-shaped string in log line: %s\n", LOGS.lines[i]);
            shaped++;
        }
    }
    pthread_mutex_unlock(&LOGS.lock);
    if (getenv("CURSOR_SDK_TEST_SHOW_LOGS"))
        for (int i = 0; i < n; i++) printf("  log: %s\n", LOGS.lines[i]);
    printf("  %d log lines; token file read: %s (%zu chars)\n", n, have_token ? "yes" : "no", strlen(token));
    CHECK(n > 0);
    CHECK_INT(bad, 0);
    CHECK(have_token);
    CHECK_INT((int)strlen(token), 43);
    CHECK_INT(leaks, 0);
    CHECK_INT(shaped, 0);
    log_capture_clear(&LOGS);
}

TEST(observe_replays) {
    fixture f;
    CHECK(fx_open(&f, double_bin(), ""));
    cursor_run *r = NULL, *o = NULL;
    CHECK_OK(cursor_agent_send(f.agent, "scenario:normal", NULL, &r, ERR));
    CHECK_OK(cursor_run_wait(r, 10000, NULL, ERR));
    CHECK_OK(cursor_run_observe(r, NULL, &o, ERR));
    drained *d = (drained *)calloc(1, sizeof *d);
    CHECK(drain(o, d));
    CHECK_INT(d->end_status, CURSOR_END);
    CHECK(d->n >= NORMAL_N);
    CHECK_STR(d->types[d->n - 1], "result");
    CHECK_STR(d->text, NORMAL_TEXT);
    char mid[16];
    snprintf(mid, sizeof mid, "%s", d->offsets[d->n - 3]);
    cursor_run_free(o);
    CHECK_OK(cursor_run_observe(r, mid, &o, ERR));
    CHECK(drain(o, d));
    CHECK_INT(d->n, 2);
    free(d);
    cursor_run_free(o);
    cursor_run_free(r);
    fx_close(&f);
}

static const h_test TESTS[] = {
    T(version_and_status_names),
    T(client_ping_version),
    T(eager_client_starts_now),
    T(normal_flow_poll),
    T(event_accessors),
    T(wait_result_json),
    T(deltas_and_steps),
    T(failing_run),
    T(cancel_run),
    T(wait_timeout_then_cancel),
    T(busy_agent),
    T(error_accessors_not_found),
    T(error_accessors_local_errors),
    T(management_calls),
    T(list_agents_paging),
    T(prompt_one_shot),
    T(misuse_null_everywhere),
    T(misuse_invalid_utf8),
    T(misuse_malformed_json),
    T(misuse_unknown_option_keys),
    T(misuse_out_of_range_client_options),
    T(fork_child_gets_usage_and_parent_keeps_its_bridge),
    T(wait_fd_cloexec_and_closed_by_free),
    T(cancel_returns_at_once),
    T(client_shutdown_then_usage),
    T(timeout_zero_never_blocks),
    T(cancel_wakes_blocked_next_event),
    T(wait_fd_poll),
    T(push_mode_order),
    T(push_free_from_other_thread),
    T(push_free_from_inside_callback),
    T(push_cancel_from_other_thread),
    T(bridge_dies_mid_run),
    T(bridge_dies_mid_run_push),
    T(many_threads_one_client),
    T(log_callback_no_token),
    T(observe_replays),
};

int main(int argc, char **argv) { return h_main(TESTS, H_COUNT(TESTS), argc, argv); }
