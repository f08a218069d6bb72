/*
 * Queued tools through the C API (against the bridge double): no library thread runs host code;
 * the host's poll loop watches cursor_client_tool_fd and the run's wake descriptor, takes calls
 * with cursor_client_next_tool_call and answers them on its own thread. Built and run by
 * scripts/c-test.sh in every mode (plain, AddressSanitizer + UBSan, valgrind).
 */
#define _XOPEN_SOURCE 700
#include "common.h"

#include <fcntl.h>
#include <poll.h>

static bool fd_readable(int fd, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Takes one call, or NULL when none is queued (checking the documented out/status pair). */
static cursor_tool_call *take(cursor_client *c) {
    cursor_tool_call *call = (cursor_tool_call *)1;
    int st = cursor_client_next_tool_call(c, &call, NULL);
    if (st == CURSOR_OK && call) return call;
    if (st != CURSOR_TIMEOUT || call) h_fail(__FILE__, __LINE__, "next_tool_call: status %d, call %p", st, (void *)call);
    return NULL;
}

/* One poll loop over the run's and the tools' descriptors until the run ends: the way an
 * editor or game loop drives a turn. Answers each call on this thread; returns the number. */
static int drive(cursor_client *c, cursor_run *r, int answer_mode) {
    int tool_fd = cursor_client_tool_fd(c), run_fd = cursor_run_wait_fd(r), answered = 0;
    if (tool_fd < 0 || run_fd < 0) {
        h_fail(__FILE__, __LINE__, "no descriptors (%d, %d)", tool_fd, run_fd);
        return -1;
    }
    double deadline = h_now_ms() + 30000 * h_scale();
    for (;;) {
        if (h_now_ms() > deadline) {
            h_fail(__FILE__, __LINE__, "the run did not end in time");
            return -1;
        }
        struct pollfd p[2] = {{.fd = tool_fd, .events = POLLIN}, {.fd = run_fd, .events = POLLIN}};
        if (poll(p, 2, 200) < 0) continue;
        if (p[0].revents & POLLIN) {
            cursor_tool_call *call = take(c);
            if (!call) h_fail(__FILE__, __LINE__, "the tool descriptor was readable with nothing queued");
            for (; call; call = take(c)) {
                if (!strstr(cursor_tool_call_args_json(call), "hello from the double") ||
                    !cursor_tool_call_id(call) || !cursor_tool_call_agent_id(call)) {
                    h_fail(__FILE__, __LINE__, "unexpected call %s", cursor_tool_call_args_json(call));
                }
                int st = answer_mode ? cursor_tool_call_fail(call, "queued failure on purpose", NULL)
                                     : cursor_tool_call_complete(call, "{\"queued\":\"from C\"}", NULL);
                if (st != CURSOR_OK) h_fail(__FILE__, __LINE__, "answering: %d", st);
                cursor_tool_call_free(call);
                answered++;
            }
            if (fd_readable(tool_fd, 0)) h_fail(__FILE__, __LINE__, "still readable with the queue empty");
        }
        if (p[1].revents & POLLIN) {
            cursor_event *ev = NULL;
            int st;
            while ((st = cursor_run_next_event(r, 0, &ev, NULL)) == CURSOR_OK) cursor_event_free(ev);
            if (st == CURSOR_END) return answered;
        }
    }
}

static char *queued_turn(const char *message, int answer_mode, int want_calls) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    if (!dbl) return NULL;
    char *result = NULL;
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    cursor_error *e = NULL;
    if (cursor_client_new(h_options(t, dbl, ""), &c, &e) != CURSOR_OK ||
        cursor_client_add_queued_tool(c, "qtool", "A queued tool", NULL, &e) != CURSOR_OK ||
        cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, &e) != CURSOR_OK ||
        cursor_agent_send(a, message, NULL, &r, &e) != CURSOR_OK) {
        h_fail(__FILE__, __LINE__, "setup: %s", h_msg(e));
    } else {
        int n = drive(c, r, answer_mode);
        if (n != want_calls) h_fail(__FILE__, __LINE__, "answered %d calls, want %d", n, want_calls);
        if (cursor_run_wait(r, 10000, &result, &e) != CURSOR_OK) h_fail(__FILE__, __LINE__, "wait: %s", h_msg(e));
    }
    cursor_error_free(e);
    cursor_run_free(r);
    cursor_agent_free(a);
    cursor_client_free(c);
    h_tmp_free(t);
    return result;
}

TEST(queued_tool_answered_from_the_poll_loop) {
    char *result = queued_turn("scenario:tools:3", 0, 3);
    CHECK(result);
    CHECK_CONTAINS(result, "\"status\":\"finished\"");
    CHECK_INT(h_count(result, "from C"), 3);
    cursor_string_free(result);
}

TEST(queued_tool_failure_reaches_the_model) {
    char *result = queued_turn("scenario:tool:qtool", 1, 1);
    CHECK(result);
    CHECK_CONTAINS(result, "queued failure on purpose");
    cursor_string_free(result);
}

TEST(client_free_answers_queued_calls_and_closes_the_descriptor) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    CHECK_OK(cursor_client_new(h_options(t, dbl, ""), &c, ERR));
    CHECK_OK(cursor_client_add_queued_tool(c, "qtool", NULL, NULL, ERR));
    int fd = cursor_client_tool_fd(c);
    CHECK(fd >= 0);
    CHECK_INT(cursor_client_tool_fd(c), fd);
    CHECK(!fd_readable(fd, 0));
    CHECK_OK(cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, ERR));
    CHECK_OK(cursor_agent_send(a, "scenario:tools:2", NULL, &r, ERR));
    CHECKF(fd_readable(fd, (int)(20000 * h_scale())), "no call was queued");
    cursor_tool_call *held = take(c);
    CHECK(held);
    double t0 = h_now_ms();
    cursor_client_free(c); /* one call handed over, one maybe still queued: both answered */
    CHECKF(h_now_ms() - t0 < 10000 * h_scale(), "cursor_client_free took %.0f ms", h_now_ms() - t0);
    CHECK(fcntl(fd, F_GETFD) == -1); /* closed with the client */
    CHECK_ST(cursor_tool_call_complete(held, "1", ERR), CURSOR_E_USAGE);
    cursor_tool_call_free(held);
    cursor_run_free(r);
    cursor_agent_free(a);
    h_tmp_free(t);
}

TEST(queued_tool_misuse) {
    const char *dbl = h_env("CURSOR_SDK_TEST_DOUBLE");
    CHECK(dbl);
    h_env_t *t = h_tmp_new();
    cursor_client *c = NULL;
    CHECK_OK(cursor_client_new(h_options(t, dbl, ""), &c, ERR));
    CHECK_ST(cursor_client_add_queued_tool(NULL, "q", NULL, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_queued_tool(c, NULL, NULL, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_queued_tool(c, "no spaces", NULL, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_add_queued_tool(c, "q", NULL, "[1]", ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_next_tool_call(c, NULL, ERR), CURSOR_E_INVALID_ARGUMENT);
    cursor_tool_call *call = NULL;
    CHECK_ST(cursor_client_next_tool_call(NULL, &call, ERR), CURSOR_E_INVALID_ARGUMENT);
    CHECK_ST(cursor_client_next_tool_call(c, &call, ERR), CURSOR_TIMEOUT);
    CHECK(call == NULL);
    CHECK_INT(cursor_client_tool_fd(NULL), -1);
    int fd = cursor_client_tool_fd(c);
    CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) && (fcntl(fd, F_GETFL) & O_NONBLOCK));
    cursor_client_free(c);
    h_tmp_free(t);
}

static const h_test TESTS[] = {
    T(queued_tool_answered_from_the_poll_loop),
    T(queued_tool_failure_reaches_the_model),
    T(client_free_answers_queued_calls_and_closes_the_descriptor),
    T(queued_tool_misuse),
};

int main(int argc, char **argv) { return h_main(TESTS, H_COUNT(TESTS), argc, argv); }
