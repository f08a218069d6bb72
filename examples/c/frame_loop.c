/* frame_loop: a 60 Hz loop (a game or UI thread) that streams a run without ever blocking.
 *
 * Each frame: poll() the run's wake fd with timeout 0; when readable, drain events with
 * cursor_run_next_event(run, 0, …) until CURSOR_TIMEOUT (which re-arms the fd) or CURSOR_END;
 * then "render" and sleep until the next frame. After a deadline the run is cancelled from the
 * frame thread; the loop goes on until the stream ends. The worst frame's own time (pumping +
 * work, not the sleep) must fit in the 16.7 ms budget, or the program fails (a frame that
 * blocked on the stream would wait for the next chunk, 50 ms apart with the double).
 *
 * Usage: ./frame_loop [prompt] [deadline_ms] [model]
 * With the bridge double: ./frame_loop scenario:slow:50 1000 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cursor_sdk.h>

#define FRAME_MS (1000.0 / 60.0)
#define WORST_ALLOWED_MS FRAME_MS

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const char *what, cursor_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, cursor_error_message(err));
    cursor_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 1 ? argv[1] : "Count slowly to one hundred";
    double deadline_ms = argc > 2 ? atof(argv[2]) : 1000;
    char agent_options[256];
    snprintf(agent_options, sizeof agent_options, "{\"model\":\"%s\"}", argc > 3 ? argv[3] : "composer-2");

    cursor_client *client;
    cursor_agent *agent;
    cursor_run *run;
    cursor_error *err;
    /* Setup may block (the bridge starts): do it before the frame loop. */
    if (cursor_client_new(NULL, &client, &err) != CURSOR_OK) return fail("cursor_client_new", err);
    if (cursor_agent_create(client, agent_options, &agent, &err) != CURSOR_OK) return fail("cursor_agent_create", err);
    if (cursor_agent_send(agent, prompt, NULL, &run, &err) != CURSOR_OK) return fail("cursor_agent_send", err);
    int fd = cursor_run_wait_fd(run);
    if (fd < 0) {
        fprintf(stderr, "no wake fd on this platform\n");
        return 1;
    }

    double start = now_ms(), worst = 0, next_frame = start;
    long frames = 0, events = 0, chars = 0;
    int cancelled = 0, ended = 0, rc = 0;
    while (!ended) {
        double frame_start = now_ms();
        /* 1. pump the run: never blocks */
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) == 1) {
            for (;;) {
                cursor_event *ev;
                cursor_status st = cursor_run_next_event(run, 0, &ev, &err);
                if (st == CURSOR_OK) {
                    const char *text = cursor_event_text(ev);
                    if (text && strcmp(cursor_event_type(ev), "assistant") == 0) chars += (long)strlen(text);
                    events++;
                    cursor_event_free(ev);
                } else if (st == CURSOR_TIMEOUT) {
                    break;
                } else if (st == CURSOR_END) {
                    ended = 1;
                    break;
                } else {
                    rc = fail("cursor_run_next_event", err);
                }
            }
        }
        /* 2. the deadline: cancel (returns promptly; the stream then ends by itself) */
        if (!cancelled && frame_start - start >= deadline_ms) {
            if (cursor_run_cancel(run, &err) != CURSOR_OK) rc = fail("cursor_run_cancel", err);
            cancelled = 1;
        }
        /* 3. the frame's own work would go here */
        double took = now_ms() - frame_start;
        if (took > worst) worst = took;
        frames++;
        /* 4. sleep until the next frame */
        next_frame += FRAME_MS;
        double wait = next_frame - now_ms();
        if (wait > 0) {
            struct timespec ts = {(time_t)(wait / 1000), (long)((wait - (double)(long)(wait / 1000) * 1000) * 1e6)};
            nanosleep(&ts, NULL);
        } else {
            next_frame = now_ms();
        }
        if (now_ms() - start > deadline_ms + 10000) {
            fprintf(stderr, "the run did not end within 10 s of the cancel\n");
            rc = 1;
            break;
        }
    }

    char *result = NULL;
    if (cursor_run_wait(run, 0, &result, &err) != CURSOR_OK) rc = fail("cursor_run_wait", err);
    printf("frames=%ld events=%ld chars=%ld cancelled=%d status=%d worst_frame_ms=%.3f budget_ms=%.3f\n", frames,
           events, chars, cancelled, (int)cursor_run_status(run), worst, FRAME_MS);
    if (result && !strstr(result, cancelled ? "\"status\":\"cancelled\"" : "\"status\":\"finished\"")) {
        fprintf(stderr, "unexpected result: %s\n", result);
        rc = 1;
    }
    cursor_string_free(result);
    if (worst >= WORST_ALLOWED_MS) {
        fprintf(stderr, "worst frame %.3f ms does not fit in the %.1f ms budget\n", worst, FRAME_MS);
        rc = 1;
    }
    cursor_run_free(run);
    cursor_agent_free(agent);
    cursor_client_free(client);
    return rc;
}
