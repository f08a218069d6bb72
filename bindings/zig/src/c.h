/* Everything Zig sees of C: translated by b.addTranslateC in build.zig and exposed as
   `cursor_sdk.c`. The header is the library's own: no declaration is copied by hand. */
#include <cursor_sdk.h>
