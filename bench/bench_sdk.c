/*
 * bench_sdk: measures cursor_sdk through its C ABI (linked to the release libcursor_sdk.so.0).
 * Every subcommand prints one JSON object on stdout; any failure exits non-zero.
 *
 *   bench_sdk ping     <client_options_json> <n>   n Pings on one client (after 50 warm-ups): ns per call,
 *                                                  and the process's CPU time over them (cpu_ns)
 *   bench_sdk startup  <client_options_json>       cursor_client_new + first cursor_client_ping; host RSS
 *   bench_sdk stream   <client_options_json> <n>   scenario:long:<n> through cursor_run_next_event (wall and
 *                                                  CPU time of every thread, send to end)
 *   bench_sdk tools    <client_options_json> <n>   scenario:toolseq:<n> against a C tool (cursor_client_add_tool)
 *   bench_sdk idle     <client_options_json>       host RSS with an idle, started client
 *   bench_sdk first-event <client_options_json> <k> k short runs: send to first event
 */
#define _GNU_SOURCE
#include "cursor_sdk.h"
#include "measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, cursor_status st, cursor_error *err) {
    fprintf(stderr, "bench_sdk: %s failed: %s (%s)\n", what, cursor_status_name(st),
            err ? cursor_error_message(err) : "");
    cursor_error_free(err);
    exit(1);
}

/* The run's next event, waiting as long as it takes; NULL at the end; a failure exits. */
static cursor_event *next_event(cursor_run *r) {
    cursor_event *ev = NULL;
    cursor_error *err = NULL;
    cursor_status st = cursor_run_next_event(r, -1, &ev, &err);
    if (st == CURSOR_END) return NULL;
    if (st != CURSOR_OK) die("cursor_run_next_event", st, err);
    return ev;
}

#define CHECK(what, call)                                                                   \
    do {                                                                                    \
        cursor_error *err_ = NULL;                                                          \
        cursor_status st_ = (call);                                                         \
        if (st_ != CURSOR_OK) die(what, st_, err_);                                          \
    } while (0)
/* CHECK needs `&err_` inside the call: */
#define E (&err_)

static cursor_client *new_client(const char *opts) {
    cursor_client *c = NULL;
    CHECK("cursor_client_new", cursor_client_new(opts, &c, E));
    return c;
}

static void print_ns_array(const uint64_t *v, size_t n) {
    putchar('[');
    for (size_t i = 0; i < n; i++) printf(i ? ",%llu" : "%llu", (unsigned long long)v[i]);
    putchar(']');
}

static int cmd_ping(const char *opts, long n) {
    cursor_client *c = new_client(opts);
    for (int i = 0; i < 50; i++) CHECK("cursor_client_ping", cursor_client_ping(c, E));
    uint64_t *ns = calloc((size_t)n, sizeof *ns);
    uint64_t cpu0 = cpu_ns();
    for (long i = 0; i < n; i++) {
        uint64_t t = now_ns();
        CHECK("cursor_client_ping", cursor_client_ping(c, E));
        ns[i] = now_ns() - t;
    }
    uint64_t cpu = cpu_ns() - cpu0;
    printf("{\"cpu_ns\":%llu,\"ns\":", (unsigned long long)cpu);
    print_ns_array(ns, (size_t)n);
    printf("}\n");
    free(ns);
    cursor_client_free(c);
    return 0;
}

static int cmd_startup(const char *opts) {
    long rss0 = proc_kb("VmRSS");
    uint64_t t0 = now_ns();
    cursor_client *c = new_client(opts);
    CHECK("cursor_client_start", cursor_client_start(c, E));
    uint64_t tr = now_ns();
    CHECK("cursor_client_ping", cursor_client_ping(c, E));
    uint64_t t1 = now_ns();
    long rss = proc_kb("VmRSS"), hwm = proc_kb("VmHWM");
    uint64_t t2 = now_ns();
    cursor_client_free(c);
    uint64_t t3 = now_ns();
    printf("{\"startup_ns\":%llu,\"ready_ns\":%llu,\"free_ns\":%llu,\"rss_before_kb\":%ld,\"rss_kb\":%ld,"
           "\"hwm_kb\":%ld}\n",
           (unsigned long long)(t1 - t0), (unsigned long long)(tr - t0), (unsigned long long)(t3 - t2), rss0, rss,
           hwm);
    return 0;
}

static int cmd_idle(const char *opts) {
    cursor_client *c = new_client(opts);
    CHECK("cursor_client_ping", cursor_client_ping(c, E));
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    printf("{\"rss_kb\":%ld,\"hwm_kb\":%ld}\n", proc_kb("VmRSS"), proc_kb("VmHWM"));
    cursor_client_free(c);
    return 0;
}

static cursor_agent *new_agent(cursor_client *c) {
    cursor_agent *a = NULL;
    CHECK("cursor_agent_create", cursor_agent_create(c, "{\"model\":\"composer-2\"}", &a, E));
    return a;
}

static int cmd_stream(const char *opts, long n) {
    cursor_client *c = new_client(opts);
    CHECK("cursor_client_ping", cursor_client_ping(c, E));
    cursor_agent *a = new_agent(c);
    char msg[64];
    snprintf(msg, sizeof msg, "scenario:long:%ld", n);
    reset_hwm();
    long rss0 = proc_kb("VmRSS");
    uint64_t t0 = now_ns(), first = 0, cpu0 = cpu_ns();
    cursor_run *r = NULL;
    CHECK("cursor_agent_send", cursor_agent_send(a, msg, NULL, &r, E));
    long events = 0, assistant = 0;
    for (cursor_event *ev; (ev = next_event(r));) {
        if (!first) first = now_ns();
        events++;
        const char *ty = cursor_event_type(ev);
        if (ty && strcmp(ty, "assistant") == 0 && cursor_event_text(ev)) assistant++;
        cursor_event_free(ev);
    }
    uint64_t t1 = now_ns(), cpu = cpu_ns() - cpu0;
    long hwm = proc_kb("VmHWM");
    if (assistant != n) {
        fprintf(stderr, "bench_sdk: stream: %ld assistant events, expected %ld\n", assistant, n);
        return 1;
    }
    printf("{\"events\":%ld,\"assistant\":%ld,\"total_ns\":%llu,\"cpu_ns\":%llu,\"first_event_ns\":%llu,"
           "\"rss_before_kb\":%ld,\"hwm_kb\":%ld}\n",
           events, assistant, (unsigned long long)(t1 - t0), (unsigned long long)cpu,
           (unsigned long long)(first - t0), rss0, hwm);
    cursor_run_free(r);
    cursor_agent_free(a);
    cursor_client_free(c);
    return 0;
}

/* k short runs (scenario:long:1) on one agent: ns from cursor_agent_send to the first event. */
static int cmd_first_event(const char *opts, long k) {
    cursor_client *c = new_client(opts);
    CHECK("cursor_client_ping", cursor_client_ping(c, E));
    cursor_agent *a = new_agent(c);
    uint64_t *ns = calloc((size_t)k, sizeof *ns);
    for (long i = -2; i < k; i++) { /* two warm-up runs */
        cursor_run *r = NULL;
        uint64_t t0 = now_ns(), first = 0;
        CHECK("cursor_agent_send", cursor_agent_send(a, "scenario:long:1", NULL, &r, E));
        for (cursor_event *ev; (ev = next_event(r));) {
            if (!first) first = now_ns();
            cursor_event_free(ev);
        }
        if (i >= 0) ns[i] = first - t0;
        cursor_run_free(r);
    }
    printf("{\"ns\":");
    print_ns_array(ns, (size_t)k);
    printf("}\n");
    free(ns);
    cursor_agent_free(a);
    cursor_client_free(c);
    return 0;
}

static void bench_tool(void *ud, cursor_tool_call *call) {
    (void)ud;
    cursor_tool_call_complete(call, "{\"ok\":true}", NULL);
    cursor_tool_call_free(call);
}

static int cmd_tools(const char *opts, long n) {
    cursor_client *c = new_client(opts);
    CHECK("cursor_client_add_tool",
          cursor_client_add_tool(c, "bench_echo", "Answers {ok:true}.", NULL, bench_tool, NULL, NULL, E));
    cursor_agent *a = new_agent(c);
    char msg[64];
    snprintf(msg, sizeof msg, "scenario:toolseq:%ld", n);
    cursor_run *r = NULL;
    uint64_t t0 = now_ns();
    CHECK("cursor_agent_send", cursor_agent_send(a, msg, NULL, &r, E));
    char *report = NULL;
    for (cursor_event *ev; (ev = next_event(r));) {
        const char *text = cursor_event_text(ev);
        const char *ty = cursor_event_type(ev);
        if (ty && strcmp(ty, "assistant") == 0 && text && strncmp(text, "toolseq ", 8) == 0)
            report = strdup(text + 8);
        cursor_event_free(ev);
    }
    uint64_t t1 = now_ns();
    if (!report) {
        fprintf(stderr, "bench_sdk: tools: no toolseq report in the run\n");
        return 1;
    }
    printf("{\"run_ns\":%llu,\"report\":%s}\n", (unsigned long long)(t1 - t0), report);
    free(report);
    cursor_run_free(r);
    cursor_agent_free(a);
    cursor_client_free(c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_sdk ping|startup|stream|tools|idle <client_options_json> [n]\n");
        return 2;
    }
    const char *cmd = argv[1], *opts = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 0;
    if (!strcmp(cmd, "ping")) return cmd_ping(opts, n);
    if (!strcmp(cmd, "startup")) return cmd_startup(opts);
    if (!strcmp(cmd, "stream")) return cmd_stream(opts, n);
    if (!strcmp(cmd, "tools")) return cmd_tools(opts, n);
    if (!strcmp(cmd, "first-event")) return cmd_first_event(opts, n);
    if (!strcmp(cmd, "idle")) return cmd_idle(opts);
    fprintf(stderr, "bench_sdk: unknown subcommand %s\n", cmd);
    return 2;
}
