/* Sanitizer canary: deliberately leaks an error object allocated inside the Rust library. The
 * sanitize run requires LeakSanitizer to report it, proving leaks of library allocations are
 * seen (a clean suite run then means something). Not part of the normal suites. */
#include <stdio.h>

#include "cursor_sdk.h"

int main(void) {
    cursor_client *c = NULL;
    cursor_error *err = NULL;
    if (cursor_client_new("{\"unknownKey\":1}", &c, &err) != CURSOR_E_INVALID_ARGUMENT) return 2;
    printf("leaking %p on purpose\n", (void *)err);
    err = NULL; /* lost */
    return 0;
}
