// quickstart: stream one answer with the C++ binding (no exceptions needed).
// Usage: ./quickstart [prompt] (needs CURSOR_API_KEY and a bridge; see bindings/cpp/README.md)
#include <cursor_sdk.hpp>

#include <cstdio>

int main(int argc, char **argv) {
    auto client = cursor::Client::create();
    auto agent = client ? client->create_agent(R"({"model":"composer-2"})") : client.error();
    auto run = agent ? agent->send(argc > 1 ? argv[1] : "Explain recursion in one line") : agent.error();
    if (!run) return std::fprintf(stderr, "%s\n", run.error().message().data()), 1;
    for (cursor::Event &ev : *run)
        if (ev.type() == "assistant" && ev.text()) std::printf("%.*s", static_cast<int>(ev.text()->size()), ev.text()->data());
    std::printf("\n[%s]\n", run->stream_error() ? run->stream_error()->message().data() : "done");
    return run->stream_error() ? 1 : 0;
}
