/* quickstart: one prompt, one answer. Build: cc quickstart.c $(pkg-config --cflags --libs cursor_sdk)
 * Run: CURSOR_API_KEY=key_... ./quickstart "Explain recursion in one line" */
#include <stdio.h>
#include <cursor_sdk.h>

int main(int argc, char **argv) {
    char *text;
    cursor_error *err;
    if (cursor_prompt(argc > 1 ? argv[1] : "Say hello", "{\"model\":\"composer-2\"}", &text, &err) != CURSOR_OK) {
        fprintf(stderr, "cursor_prompt failed: %s\n", cursor_error_message(err));
        cursor_error_free(err);
        return 1;
    }
    puts(text);
    cursor_string_free(text);
    return 0;
}
