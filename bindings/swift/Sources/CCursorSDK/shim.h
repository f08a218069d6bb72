/* The C API the Swift binding wraps (include/cursor_sdk.h, found on the include path). */
#include <cursor_sdk.h>
