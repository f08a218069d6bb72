/* The header compiles as C11 with -Wall -Wextra -Wpedantic -Werror, included twice, and links. */
#include "cursor_sdk.h"
#include "cursor_sdk.h" /* the include guard works */

#include <string.h>

int main(void) {
    cursor_status st = CURSOR_OK;
    cursor_event_kind_t k = CURSOR_EVENT_RESULT;
    cursor_run_status_t rs = CURSOR_RUN_FINISHED;
    cursor_log_level l = CURSOR_LOG_DEBUG;
    cursor_log_fn log_fn = NULL;
    cursor_event_fn ev_fn = NULL;
    (void)k; (void)rs; (void)l; (void)log_fn; (void)ev_fn;
    return (st == CURSOR_OK && strcmp(cursor_sdk_version(), CURSOR_SDK_VERSION) == 0 && CURSOR_SDK_ABI_VERSION == 0) ? 0 : 1;
}
