/* The header compiles as C11 with -Wall -Wextra -Wpedantic -Werror (and clang's -Weverything),
 * included twice, and links. It passes NULL only where the header says CURSOR_NULLABLE, so
 * clang with -Werror=nonnull accepts it; with -DHEADER_NULL_TO_NONNULL it also passes NULL to
 * non-null parameters, which clang must reject (scripts/c-test.sh checks both). */
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
    cursor_client *c = NULL;
    cursor_error *err = NULL;
    (void)k; (void)rs; (void)l; (void)log_fn; (void)ev_fn;

    /* NULL where the header allows it: options, err, a *_free handle, a removed callback. */
    cursor_set_log_callback(CURSOR_LOG_ERROR, NULL, NULL, NULL);
    if (cursor_client_new(NULL, &c, NULL) != CURSOR_OK || c == NULL) return 1;
    cursor_client_free(c);
    cursor_client_free(NULL);
    cursor_error_free(NULL);
    cursor_string_free(NULL);
    if (cursor_client_new("{\"nope\":1}", &c, &err) != CURSOR_E_INVALID_ARGUMENT || err == NULL) return 1;
    if (cursor_error_rate_limit(err, NULL, NULL, NULL) || cursor_error_connect_code(err) != NULL) return 1;
    cursor_error_free(err);
#ifdef HEADER_NULL_TO_NONNULL
    /* Each must be a -Wnonnull error: a NULL handle, a NULL out-pointer, a NULL required string. */
    (void)cursor_client_start(NULL, NULL);
    (void)cursor_client_new(NULL, NULL, NULL);
    (void)cursor_agent_resume(c, NULL, NULL, NULL, NULL);
#endif
    return (st == CURSOR_OK && strcmp(cursor_sdk_version(), CURSOR_SDK_VERSION) == 0 && CURSOR_SDK_ABI_VERSION == 0) ? 0 : 1;
}
