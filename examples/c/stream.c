/* stream: prints the assistant's text as it arrives, then the run's result.
 * Usage: ./stream [prompt] [model]   (bridge found automatically; key from CURSOR_API_KEY) */
#include <stdio.h>
#include <string.h>
#include <cursor_sdk.h>

static int fail(const char *what, cursor_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, cursor_error_message(err));
    cursor_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 1 ? argv[1] : "Write a haiku about C";
    char agent_options[256];
    snprintf(agent_options, sizeof agent_options, "{\"model\":\"%s\"}", argc > 2 ? argv[2] : "composer-2");

    cursor_client *client;
    cursor_agent *agent;
    cursor_run *run;
    cursor_error *err;
    if (cursor_client_new(NULL, &client, &err) != CURSOR_OK) return fail("cursor_client_new", err);
    if (cursor_agent_create(client, agent_options, &agent, &err) != CURSOR_OK) {
        cursor_client_free(client);
        return fail("cursor_agent_create", err);
    }
    if (cursor_agent_send(agent, prompt, NULL, &run, &err) != CURSOR_OK) {
        cursor_agent_free(agent);
        cursor_client_free(client);
        return fail("cursor_agent_send", err);
    }

    int rc = 0;
    for (;;) {
        cursor_event *event;
        cursor_status st = cursor_run_next_event(run, -1, &event, &err); /* blocks until an event */
        if (st == CURSOR_END) break;
        if (st != CURSOR_OK) {
            rc = fail("cursor_run_next_event", err); /* reported once; CURSOR_END follows */
            continue;
        }
        if (strcmp(cursor_event_type(event), "assistant") == 0 && cursor_event_text(event)) {
            fputs(cursor_event_text(event), stdout);
            fflush(stdout);
        }
        cursor_event_free(event);
    }
    putchar('\n');

    char *result;
    if (cursor_run_wait(run, -1, &result, &err) == CURSOR_OK) {
        fprintf(stderr, "result: %s\n", result);
        if (!strstr(result, "\"status\":\"finished\"")) rc = 1;
        cursor_string_free(result);
    } else {
        rc = fail("cursor_run_wait", err);
    }
    cursor_run_free(run);
    cursor_agent_free(agent);
    cursor_client_free(client);
    return rc;
}
