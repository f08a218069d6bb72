"""The Python baseline: the official cursor-sdk==1.1.0, run from .cache/bench-venv.

Every subcommand prints one JSON object on stdout; any failure raises (non-zero exit).

  py_bench.py ping    <url> <token> <n>        n x client.ping() on one Client (after 50 warm-ups)
  py_bench.py startup <bridge> <workspace>     Client.launch_bridge(...) + first ping; host RSS
  py_bench.py stream  <url> <token> <n>        attach, Agent.create, send scenario:long:<n>, iterate
  py_bench.py tools   <url> <token> <n>        attach, agent with a Python CustomTool, scenario:toolseq:<n>
  py_bench.py first-event <url> <token> <k>    k short runs (scenario:long:1): send() to the first event
"""

import json
import sys
import time


def proc_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def main():
    cmd = sys.argv[1]
    rss_bare = proc_kb("VmRSS")
    t_import = time.perf_counter_ns()
    import cursor_sdk
    from cursor_sdk import Agent, Client, CustomTool

    t_import = time.perf_counter_ns() - t_import
    ns = time.perf_counter_ns

    if cmd == "ping":
        url, token, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        client = Client(base_url=url, auth_token=token)
        for _ in range(50):
            client.ping()
        out = []
        for _ in range(n):
            t = ns()
            client.ping()
            out.append(ns() - t)
        client.close()
        print(json.dumps({"ns": out}))
    elif cmd == "startup":
        bridge, workspace = sys.argv[2], sys.argv[3]
        rss0 = proc_kb("VmRSS")
        t0 = ns()
        client = Client.launch_bridge(bridge, workspace=workspace)
        t_launch = ns() - t0
        client.ping()
        t1 = ns()
        time.sleep(0.2)
        rss, hwm = proc_kb("VmRSS"), proc_kb("VmHWM")
        t2 = ns()
        client.close()
        t3 = ns()
        print(json.dumps({
            "startup_ns": t1 - t0, "launch_ns": t_launch, "free_ns": t3 - t2,
            "import_ns": t_import, "rss_bare_kb": rss_bare, "rss_before_kb": rss0,
            "rss_kb": rss, "hwm_kb": hwm,
        }))
    elif cmd == "stream":
        url, token, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        client = Client(base_url=url, auth_token=token)
        client.ping()
        agent = Agent.create(client=client, model="composer-2", api_key="k")
        reset_hwm()
        rss0 = proc_kb("VmRSS")
        t0 = ns()
        run = agent.send(f"scenario:long:{n}")
        first = 0
        events = assistant = 0
        for event in run:
            if not first:
                first = ns()
            events += 1
            msg = event.sdk_message
            if msg is not None and getattr(msg, "type", "") == "assistant":
                assistant += 1
        t1 = ns()
        if assistant != n:
            raise SystemExit(f"stream: {assistant} assistant events, expected {n}")
        print(json.dumps({
            "events": events, "assistant": assistant, "total_ns": t1 - t0,
            "first_event_ns": first - t0, "rss_before_kb": rss0, "hwm_kb": proc_kb("VmHWM"),
        }))
        client.close()
    elif cmd == "first-event":
        url, token, k = sys.argv[2], sys.argv[3], int(sys.argv[4])
        client = Client(base_url=url, auth_token=token)
        agent = Agent.create(client=client, model="composer-2", api_key="k")
        out = []
        for i in range(k + 2):  # two warm-up runs
            t0 = ns()
            run = agent.send("scenario:long:1")
            first = 0
            for _ in run:
                if not first:
                    first = ns()
            if i >= 2:
                out.append(first - t0)
        print(json.dumps({"ns": out}))
        client.close()
    elif cmd == "tools":
        url, token, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
        client = Client(base_url=url, auth_token=token)
        tool = CustomTool(execute=lambda args, ctx: {"ok": True}, description="Answers {ok:true}.",
                          input_schema={"type": "object"})
        agent = Agent.create(client=client, model="composer-2", api_key="k",
                             local={"custom_tools": {"bench_echo": tool}})
        t0 = ns()
        run = agent.send(f"scenario:toolseq:{n}")
        report = None
        for msg in run.stream():
            if getattr(msg, "type", "") != "assistant":
                continue
            for block in msg.message.content:
                text = getattr(block, "text", "")
                if text.startswith("toolseq "):
                    report = json.loads(text[8:])
        t1 = ns()
        if report is None:
            raise SystemExit("tools: no toolseq report in the run")
        print(json.dumps({"run_ns": t1 - t0, "report": report}))
        agent.close()
        client.close()
    else:
        raise SystemExit(f"unknown subcommand {cmd}")
    del cursor_sdk


if __name__ == "__main__":
    main()
