/*
 * warm_start: one process's start through the C ABI (release libcursor_sdk), for bench/warm.py,
 * which runs it cold (a bridge of its own) and warm (`sharedBridge`, a shared bridge already up).
 * Prints one JSON object on stdout; any failure exits non-zero.
 *
 *   warm_start ping   <client_options_json>            cursor_client_new to the first Ping's answer
 *   warm_start prompt <client_options_json> <message>  new client, agent, send, wait, close, free
 */
#include "cursor_sdk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long ns_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void check(const char *what, cursor_status st, cursor_error *err) {
    if (st == CURSOR_OK) return;
    fprintf(stderr, "warm_start: %s failed: %s (%s)\n", what, cursor_status_name(st),
            err ? cursor_error_message(err) : "");
    cursor_error_free(err);
    exit(1);
}

static int cmd_ping(const char *opts) {
    cursor_error *err = NULL;
    cursor_client *c = NULL;
    unsigned long long t0 = ns_now();
    check("cursor_client_new", cursor_client_new(opts, &c, &err), err);
    check("cursor_client_ping", cursor_client_ping(c, &err), err);
    unsigned long long t1 = ns_now();
    cursor_client_free(c);
    printf("{\"start_to_ping_ns\":%llu}\n", t1 - t0);
    return 0;
}

static int cmd_prompt(const char *opts, const char *message) {
    cursor_error *err = NULL;
    cursor_client *c = NULL;
    cursor_agent *a = NULL;
    cursor_run *r = NULL;
    char *result = NULL;
    unsigned long long t0 = ns_now();
    check("cursor_client_new", cursor_client_new(opts, &c, &err), err);
    check("cursor_agent_create", cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, &err), err);
    check("cursor_agent_send", cursor_agent_send(a, message, NULL, &r, &err), err);
    check("cursor_run_wait", cursor_run_wait(r, -1, &result, &err), err);
    check("cursor_agent_close", cursor_agent_close(a, &err), err);
    if (!result || !strstr(result, "\"finished\"")) {
        fprintf(stderr, "warm_start: the run did not finish: %s\n", result ? result : "(no result)");
        return 1;
    }
    cursor_string_free(result);
    cursor_run_free(r);
    cursor_agent_free(a);
    cursor_client_free(c);
    printf("{\"prompt_ns\":%llu}\n", ns_now() - t0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "ping")) return cmd_ping(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "prompt")) return cmd_prompt(argv[2], argv[3]);
    fprintf(stderr, "usage: warm_start ping <options_json> | prompt <options_json> <message>\n");
    return 2;
}
