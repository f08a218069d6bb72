/* custom_tool: gives the agent a tool written in C ("player_hp", as a game might), runs a prompt,
 * and prints each tool call as the agent makes it.
 * Usage: ./custom_tool [prompt] [model]   (bridge found automatically; key from CURSOR_API_KEY)
 *
 * The tool answers at once here; a host that must run it on its main thread can keep the
 * cursor_tool_call and complete it later, from any thread. */
#include <stdio.h>
#include <string.h>
#include <cursor_sdk.h>

typedef struct {
    int hp;
    int calls;
} game;

/* Called on a library thread for each call of the tool. */
static void player_hp(void *user_data, cursor_tool_call *call) {
    game *g = (game *)user_data;
    char result[128];
    g->calls++;
    fprintf(stderr, "tool %s(%s)\n", cursor_tool_call_name(call), cursor_tool_call_args_json(call));
    snprintf(result, sizeof result, "{\"hp\":%d,\"max\":100}", g->hp);
    if (cursor_tool_call_complete(call, result, NULL) != CURSOR_OK) {
        cursor_tool_call_fail(call, "could not answer", NULL);
    }
    cursor_tool_call_free(call);
}

static int fail(const char *what, cursor_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, cursor_error_message(err));
    cursor_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 1 ? argv[1] : "How healthy is the player? Use the player_hp tool.";
    char agent_options[256];
    snprintf(agent_options, sizeof agent_options, "{\"model\":\"%s\"}", argc > 2 ? argv[2] : "composer-2");
    game g = {73, 0};

    cursor_client *client;
    cursor_agent *agent;
    cursor_run *run;
    cursor_error *err;
    if (cursor_client_new(NULL, &client, &err) != CURSOR_OK) return fail("cursor_client_new", err);
    if (cursor_client_add_tool(client, "player_hp", "The player's current and maximum hit points",
                               "{\"type\":\"object\",\"properties\":{}}", player_hp, &g, NULL, &err) != CURSOR_OK ||
        cursor_agent_create(client, agent_options, &agent, &err) != CURSOR_OK) {
        cursor_client_free(client);
        return fail("setting up the agent", err);
    }
    if (cursor_agent_send(agent, prompt, NULL, &run, &err) != CURSOR_OK) {
        cursor_agent_free(agent);
        cursor_client_free(client);
        return fail("cursor_agent_send", err);
    }
    char *text = NULL;
    int rc = 0;
    if (cursor_run_wait(run, -1, NULL, &err) != CURSOR_OK) rc = fail("cursor_run_wait", err);
    if (rc == 0 && cursor_run_text(run, &text, &err) == CURSOR_OK) {
        printf("%s\n", text);
        cursor_string_free(text);
    }
    if (cursor_run_status(run) != CURSOR_RUN_FINISHED) rc = 1;
    fprintf(stderr, "the tool was called %d time(s)\n", g.calls);
    cursor_run_free(run);
    cursor_agent_free(agent);
    cursor_client_free(client);
    return rc == 0 && g.calls > 0 ? 0 : 1;
}
