// The header compiles as C++17 with -Wall -Wextra -Wpedantic -Werror, included twice, and its
// functions link with C linkage.
#include "cursor_sdk.h"
#include "cursor_sdk.h"

#include <cstring>
#include <memory>

struct ErrorDeleter {
    void operator()(cursor_error *e) const { cursor_error_free(e); }
};

int main() {
    cursor_error *raw = nullptr;
    cursor_client *c = nullptr;
    cursor_status st = cursor_client_new("{\"nope\":1}", &c, &raw);
    std::unique_ptr<cursor_error, ErrorDeleter> err(raw);
    if (st != CURSOR_E_INVALID_ARGUMENT || c != nullptr || !err) return 1;
    if (std::strstr(cursor_error_message(err.get()), "nope") == nullptr) return 1;
    return std::strcmp(cursor_sdk_version(), CURSOR_SDK_VERSION) == 0 ? 0 : 1;
}
