#!/usr/bin/env python3
"""Benchmark driver (`make bench`, `make bench QUICK=1`): ours vs the baselines, same bridge, same run.

Runs the programs in bench/ against the real bridge and the bridge double, then prints one table
and a JSON document (also written to --out). Stdlib only. It never fails on a number; it fails
(exit 1) when a measurement crashes or a baseline cannot be prepared.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# Popen's process_group needs Python 3.11; setpgrp in the child is the same thing before that.
NEW_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def med(values):
    return statistics.median(values) if values else None


class Bridge:
    """A bridge (real or double) we launched and attach to: reads the ready line, drains stderr."""

    def __init__(self, argv, env, timeout=60):
        self.t0 = time.perf_counter_ns()
        # Own process group (for killpg) but the driver's session: with sched_autogroup (on by
        # default), a bridge in another session is scheduled as a separate group, which halved
        # the measured stream throughput of every two-thread reader. Bridges that SDKs launch
        # share the host's session too.
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, **NEW_GROUP)
        self.tail = []
        deadline = time.time() + timeout
        ready = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace").rstrip("\n")
            if text.startswith("cursor-sdk-bridge ready "):
                ready = json.loads(text[len("cursor-sdk-bridge ready "):])
                break
            self.tail.append(text)
        self.ready_ns = time.perf_counter_ns() - self.t0
        if ready is None:
            self.stop()
            raise RuntimeError(f"{argv[0]} did not get ready: {self.tail[-10:]}")
        self.url = ready["url"]
        with open(ready["authTokenFile"]) as f:
            self.token = f.read().strip()
        threading.Thread(target=self._drain, daemon=True).start()

    def first_ping_ns(self):
        """Spawn to the first successful raw Ping (a fresh keep-alive-less socket): the floor for
        "client creation to first successful ping"."""
        host, port = self.url.split("//", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port))) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall((f"POST /sdk.v1.SdkBridgeControlService/Ping HTTP/1.1\r\nHost: {host}\r\n"
                       f"Authorization: Bearer {self.token}\r\nContent-Type: application/proto\r\n"
                       "Content-Length: 0\r\nConnection: close\r\n\r\n").encode())
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        if not data.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"raw first ping failed: {data[:100]!r}")
        return time.perf_counter_ns() - self.t0

    def _drain(self):
        for _ in iter(self.proc.stderr.readline, b""):
            pass

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # The launcher is `sh` running node: wait until node (same process group) is gone too,
        # so a bridge still shutting down does not slow the next measurement.
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.01)


def run_json(argv, env=None, timeout=900):
    """Runs one measurement program; its stdout is one JSON object. A crash fails the benchmark."""
    t = time.time()
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    out = json.loads(p.stdout)
    log(f"  {os.path.basename(argv[0])} {argv[1] if len(argv) > 1 else ''}: {time.time() - t:.1f} s")
    return out


def us(ns):
    return None if ns is None else ns / 1000.0


def ms(ns):
    return None if ns is None else ns / 1e6


def ratio(a, b):
    return None if not a or not b else a / b


def spread(values):
    """The median of per-pair ratios with their spread: what a noisy machine cannot flip."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": med(v), "min": min(v), "max": max(v), "p25": pct(v, 25), "p75": pct(v, 75),
            "pairs": len(v), "all": v}


def callgrind_instructions(argv, env, scratch):
    """Instructions the program executes (every thread), counted by callgrind: independent of the
    machine's load. None (logged) when valgrind is missing."""
    if not shutil.which("valgrind"):
        log(f"  callgrind {os.path.basename(argv[0])} {argv[1]}: SKIPPED, valgrind is not installed "
            "(instructions reported as null)")
        return None
    out = os.path.join(scratch, "callgrind.out")
    t = time.time()
    p = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={out}"] + argv,
                       env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"callgrind {' '.join(argv[:2])} exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    os.unlink(out)
    for line in p.stderr.decode("utf-8", "replace").splitlines():
        if "Collected :" in line:
            log(f"  callgrind {os.path.basename(argv[0])} {argv[1]} {argv[-1]}: {time.time() - t:.1f} s")
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"callgrind printed no total for {' '.join(argv[:2])}")


def instructions_per_op(make_argv, n, env, scratch):
    """Instructions per operation: runs n and 2n operations and divides the difference by n, which
    cancels start-up, connection and teardown (the same in both runs)."""
    a = callgrind_instructions(make_argv(n), env, scratch)
    b = callgrind_instructions(make_argv(2 * n), env, scratch)
    return None if a is None or b is None else (b - a) / n


def cpu_per(runs, count):
    """Median CPU time per operation (ns), from the programs' own getrusage over the measured phase."""
    v = [r["cpu_ns"] / count(r) for r in runs if r.get("cpu_ns") is not None and count(r)]
    return med(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/bench/results.json"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/bench"))
    ap.add_argument("--so", default=os.path.join(ROOT, "target/release/libcursor_sdk.so"))
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--double", default=os.path.join(ROOT, "target/release/cursor-sdk-bridge-double"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".cache/bench-venv/bin/python"))
    a = ap.parse_args()
    q = a.quick
    n_ping = 200 if q else 2000
    rounds_ping = 1 if q else 3
    # Interleaved pairs (ours, baseline), order alternating: ratios come per pair.
    pairs_ping = 5 if q else 6
    n_ping_pair = 100 if q else 1000
    pairs_stream = 5 if q else 9
    # Callgrind runs of n and 2n operations (None: not counted in this mode).
    n_cg_ping = None if q else 200
    n_cg_stream = 1000 if q else 20000
    reps_start = 2 if q else 15
    n_stream = 200000
    reps_stream = 3 if q else 5
    n_py_stream = 2000 if q else 200000
    n_tools = 100 if q else 2000
    k_first = 8 if q else 40
    n_py_tools = 100 if q else 1000

    bench_sdk = os.path.join(a.bin, "bench_sdk")
    raw = os.path.join(a.bin, "raw_client")
    py = [a.python, os.path.join(ROOT, "bench/py_bench.py")]
    scratch = tempfile.mkdtemp(prefix="cursor-bench-")
    home = os.path.join(scratch, "home")
    work = os.path.join(scratch, "ws")
    os.makedirs(home)
    os.makedirs(work)
    env = dict(os.environ, HOME=home, TMPDIR=scratch)
    env.pop("CURSOR_SDK_BRIDGE_URL", None)
    env.pop("CURSOR_SDK_BRIDGE_TOKEN", None)
    env.pop("CURSOR_API_KEY", None)
    catalog = '[{"id":"composer-2"}]'
    res = {"quick": q, "metrics": {}}
    M = res["metrics"]
    bridges = []
    try:
        # ---- Unary round trip (real bridge) ----------------------------------------------
        log(f"ping: {rounds_ping} round(s) x {n_ping} calls each, real bridge")
        real = Bridge([a.bridge, "--workspace", work], env)
        bridges.append(real)
        attach = json.dumps({"bridgeUrl": real.url, "bridgeToken": real.token, "workspace": work})
        samples = {"ours": [], "raw": [], "python": []}
        runs = {"ours": [], "raw": []}
        pair_ratios = []
        for i in range(pairs_ping):
            one = {
                "ours": lambda: run_json([bench_sdk, "ping", attach, str(n_ping_pair)]),
                "raw": lambda: run_json([raw, "ping", real.url, real.token, str(n_ping_pair)]),
            }
            for k in (("ours", "raw") if i % 2 == 0 else ("raw", "ours")):
                runs[k].append(one[k]())
                samples[k] += runs[k][-1]["ns"]
            pair_ratios.append(ratio(med(runs["ours"][-1]["ns"]), med(runs["raw"][-1]["ns"])))
        for _ in range(rounds_ping):
            samples["python"] += run_json(py + ["ping", real.url, real.token, str(n_ping)], env)["ns"]
        cg_ping = {"ours": None, "raw": None, "n": n_cg_ping}
        if n_cg_ping:
            log(f"ping: callgrind, {n_cg_ping} and {2 * n_cg_ping} calls (ours, raw)")
            cg_ping["ours"] = instructions_per_op(lambda k: [bench_sdk, "ping", attach, str(k)], n_cg_ping, env, scratch)
            cg_ping["raw"] = instructions_per_op(lambda k: [raw, "ping", real.url, real.token, str(k)], n_cg_ping, env,
                                                 scratch)
        real.stop()
        bridges.remove(real)
        ping = {k: {"median_us": us(med(v)), "p99_us": us(pct(v, 99)), "n": len(v)} for k, v in samples.items()}
        for k in ("ours", "raw"):
            ping[k]["cpu_us_per_call"] = us(cpu_per(runs[k], lambda r: len(r["ns"])))
            ping[k]["instructions_per_call"] = cg_ping[k]
        pr = spread(pair_ratios)
        M["ping"] = {
            "unit": "us", "ours": ping["ours"], "raw_floor": ping["raw"], "python_sdk": ping["python"],
            # The median of the per-pair ratios (each pair: ours and raw back to back).
            "ratio_ours_vs_raw": pr["median"], "ratio_ours_vs_raw_pairs": pr,
            "ratio_ours_vs_raw_pooled": ratio(ping["ours"]["median_us"], ping["raw"]["median_us"]),
            "cpu_ratio_ours_vs_raw": ratio(ping["ours"]["cpu_us_per_call"], ping["raw"]["cpu_us_per_call"]),
            "instructions_ratio_ours_vs_raw": ratio(cg_ping["ours"], cg_ping["raw"]),
            "speedup_vs_python": ratio(ping["python"]["median_us"], ping["ours"]["median_us"]),
            "targets": "ours <= 1.2x raw floor; >= 3x faster than Python",
            "method": f"{pairs_ping} interleaved pairs of {n_ping_pair} calls (order alternating); CPU: the host "
                      "process's getrusage over the timed calls; instructions: callgrind, (I(2n) - I(n)) / n",
        }

        # ---- Start-up (real bridge) -------------------------------------------------------
        log(f"startup: {reps_start} repetitions each, real bridge")
        st = {"bare": [], "bare_ping": [], "ours": [], "ours_ready": [], "python": [], "python_ready": []}
        rss = {"ours": [], "python": []}
        launch = json.dumps({"bridgePath": a.bridge, "workspace": work, "bridgeEnv": {"HOME": home}})
        settle = 0.2 if q else 0.7  # lets the previous bridge's exit finish before the next launch
        for _ in range(reps_start):
            time.sleep(settle)
            b = Bridge([a.bridge, "--workspace", work], env)
            st["bare"].append(b.ready_ns)
            st["bare_ping"].append(b.first_ping_ns())
            b.stop()
            time.sleep(settle)
            o = run_json([bench_sdk, "startup", launch], env)
            st["ours"].append(o["startup_ns"])
            st["ours_ready"].append(o["ready_ns"])
            rss["ours"].append(o["rss_kb"])
            time.sleep(settle)
            p = run_json(py + ["startup", a.bridge, work], env)
            st["python"].append(p["startup_ns"])
            st["python_ready"].append(p["launch_ns"])
            rss["python"].append(p["rss_kb"])
        M["startup"] = {
            "unit": "ms",
            "ours": {"median_ms": ms(med(st["ours"])), "all_ms": [ms(x) for x in st["ours"]],
                     "ready_median_ms": ms(med(st["ours_ready"]))},
            "bare_bridge": {"median_ms": ms(med(st["bare"])), "all_ms": [ms(x) for x in st["bare"]],
                            "first_raw_ping_median_ms": ms(med(st["bare_ping"]))},
            "python_sdk": {"median_ms": ms(med(st["python"])), "all_ms": [ms(x) for x in st["python"]],
                           "launch_bridge_median_ms": ms(med(st["python_ready"]))},
            "ours_minus_bare_ms": ms(med(st["ours"]) - med(st["bare"])),
            "ratio_ours_vs_bare": ratio(med(st["ours"]), med(st["bare"])),
            "speedup_vs_python": ratio(med(st["python"]), med(st["ours"])),
            "ours_minus_bare_first_ping_ms": ms(med(st["ours"]) - med(st["bare_ping"])),
            # Each repetition runs bare, ours, python back to back: paired differences cancel slow load drift.
            "paired_ours_minus_bare_median_ms": ms(med([o - b for o, b in zip(st["ours"], st["bare"])])),
            "paired_ours_ready_minus_bare_ready_median_ms": ms(med([o - b for o, b in zip(st["ours_ready"], st["bare"])])),
            "paired_python_minus_bare_median_ms": ms(med([p - b for p, b in zip(st["python"], st["bare"])])),
            "targets": "ours within 30 ms of the bare bridge's spawn-to-ready",
            "note": "ours: cursor_client_new+start+ping (ready = after cursor_client_start); bare: Popen to "
                    "ready line (and to a first raw Ping on a new socket); python: launch_bridge + ping",
        }

        # ---- Stream, first event, tools (double) ---------------------------------------------
        denv = dict(env, CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON=catalog)
        dbl = Bridge([a.double, "--workspace", work], denv)
        bridges.append(dbl)
        dattach = json.dumps({"bridgeUrl": dbl.url, "bridgeToken": dbl.token, "workspace": work, "apiKey": "k"})
        log(f"stream: {n_stream} events x {pairs_stream} pairs (ours, raw), {n_py_stream} x 1 (python), double")
        sr = {"ours": [], "raw": [], "python": []}
        for i in range(pairs_stream):
            one = {
                "ours": lambda: run_json([bench_sdk, "stream", dattach, str(n_stream)]),
                "raw": lambda: run_json([raw, "stream", dbl.url, dbl.token, str(n_stream)]),
            }
            for k in (("ours", "raw") if i % 2 == 0 else ("raw", "ours")):
                sr[k].append(one[k]())
        sr["python"].append(run_json(py + ["stream", dbl.url, dbl.token, str(n_py_stream)], env))
        log(f"stream: callgrind, {n_cg_stream} and {2 * n_cg_stream} events (ours, raw)")
        cg_stream = {
            "ours": instructions_per_op(lambda k: [bench_sdk, "stream", dattach, str(k)], n_cg_stream, env, scratch),
            "raw": instructions_per_op(lambda k: [raw, "stream", dbl.url, dbl.token, str(k)], n_cg_stream, env,
                                       scratch),
        }

        def ev_rate(r, key):
            return r[key] / (r["total_ns"] / 1e9)

        def stream_fig(rs, key):
            rates = [ev_rate(r, key) for r in rs]
            return {
                "events": rs[0][key], "median_events_per_s": med(rates), "all_events_per_s": rates,
                "median_total_ms": ms(med([r["total_ns"] for r in rs])),
                "cpu_ns_per_event": cpu_per(rs, lambda r: r[key]),
                "peak_rss_mb": max(r["hwm_kb"] for r in rs) / 1024.0,
                "rss_growth_mb": max(r["hwm_kb"] - r["rss_before_kb"] for r in rs) / 1024.0,
            }

        so, sraw, spy = stream_fig(sr["ours"], "events"), stream_fig(sr["raw"], "frames"), stream_fig(sr["python"], "events")
        so["instructions_per_event"], sraw["instructions_per_event"] = cg_stream["ours"], cg_stream["raw"]
        spr = spread([ratio(ev_rate(r, "frames"), ev_rate(o, "events")) for o, r in zip(sr["ours"], sr["raw"])])
        M["stream"] = {
            "unit": "events/s", "ours": so, "raw_reader": sraw, "python_sdk": spy,
            # The median of the per-pair ratios (each pair: ours and raw back to back).
            "ratio_raw_vs_ours": spr["median"], "ratio_raw_vs_ours_pairs": spr,
            "ratio_raw_vs_ours_pooled": ratio(sraw["median_events_per_s"], so["median_events_per_s"]),
            "cpu_ratio_ours_vs_raw": ratio(so["cpu_ns_per_event"], sraw["cpu_ns_per_event"]),
            "instructions_ratio_ours_vs_raw": ratio(cg_stream["ours"], cg_stream["raw"]),
            "speedup_vs_python": ratio(so["median_events_per_s"], spy["median_events_per_s"]),
            "targets": ">= 20x Python; within 1.25x of the raw reader; RSS growth <= 20 MB",
            "method": f"{pairs_stream} interleaved pairs of {n_stream} events (order alternating); CPU: the host "
                      "process's getrusage (every thread) from send to the end; instructions: callgrind, "
                      f"(I(2n) - I(n)) / n with n = {n_cg_stream}",
        }
        log(f"first event: {k_first} short runs each, double")
        fe = {
            "ours": run_json([bench_sdk, "first-event", dattach, str(k_first)])["ns"],
            "raw": [run_json([raw, "stream", dbl.url, dbl.token, "1"])["first_event_ns"] for _ in range(k_first // 4 or 1)],
            "python": run_json(py + ["first-event", dbl.url, dbl.token, str(k_first)], env)["ns"],
        }
        M["first_event"] = {
            "unit": "ms", "ours": {"median_ms": ms(med(fe["ours"])), "p90_ms": ms(pct(fe["ours"], 90))},
            "raw_reader": {"median_ms": ms(med(fe["raw"]))},
            "python_sdk": {"median_ms": ms(med(fe["python"])), "p90_ms": ms(pct(fe["python"], 90))},
            "speedup_vs_python": ratio(med(fe["python"]), med(fe["ours"])),
            "in_long_run_ms": {k: ms(med([r["first_event_ns"] for r in v])) for k, v in sr.items()},
            "note": "send call to the first event of a short run (scenario:long:1) on a kept agent; Python's stream "
                    "opens lazily, so its figure includes the POST; raw: one process per run (new agent)",
        }

        log(f"tools: {n_tools} sequential calls (ours), {n_py_tools} (python), double toolseq")
        to = run_json([bench_sdk, "tools", dattach, str(n_tools)])
        tp = run_json(py + ["tools", dbl.url, dbl.token, str(n_py_tools)], env)
        for name, t in (("ours", to), ("python", tp)):
            if t["report"]["errors"]:
                raise RuntimeError(f"tools ({name}): {t['report']['errors']} calls failed")

        def tool_fig(t):
            v = t["report"]["ns"]
            return {"median_us": us(med(v)), "p99_us": us(pct(v, 99)), "calls": len(v),
                    "connections": t["report"]["connects"]}

        tfo, tfp = tool_fig(to), tool_fig(tp)
        M["tool_round_trip"] = {
            "unit": "us", "ours": tfo, "python_sdk": tfp,
            "speedup_vs_python": ratio(tfp["median_us"], tfo["median_us"]),
            "targets": ">= 3x faster than Python; median <= 150 us",
            "method": "the double's scenario:toolseq times each CallCustomTool from request write to full response",
        }
        # ---- Swift (bindings/swift) ----------------------------------------- begin Swift block
        # The Swift layer against the C ABI in the same run, same double: stream throughput (events
        # read through `run.events`) and ping, alternating C and Swift. CURSOR_SDK_BENCH_SWIFT is
        # scripts/swift-bench.sh (the Makefile builds it first); the program runs in the Swift chroot.
        swift = os.environ.get("CURSOR_SDK_BENCH_SWIFT")
        if swift:
            log(f"swift: stream {n_stream} events x {reps_stream} and ping {n_ping} x {rounds_ping}, C vs Swift, double")
            sw = {"c": [], "swift": [], "c_ping": [], "swift_ping": []}
            for _ in range(reps_stream):
                sw["c"].append(run_json([bench_sdk, "stream", dattach, str(n_stream)]))
                sw["swift"].append(run_json([swift, "run", "stream", dattach, str(n_stream)]))
            for _ in range(rounds_ping):
                sw["c_ping"] += run_json([bench_sdk, "ping", dattach, str(n_ping)])["ns"]
                sw["swift_ping"] += run_json([swift, "run", "ping", dattach, str(n_ping)])["ns"]
            sc, ss = stream_fig(sw["c"], "events"), stream_fig(sw["swift"], "events")
            M["swift"] = {
                "stream": {"unit": "events/s", "c_abi": sc, "swift": ss,
                           "ns_per_event_c": 1e9 / sc["median_events_per_s"],
                           "ns_per_event_swift": 1e9 / ss["median_events_per_s"],
                           "ratio_swift_vs_c_per_event": ratio(sc["median_events_per_s"], ss["median_events_per_s"])},
                "ping": {"unit": "us", "c_abi": {"median_us": us(med(sw["c_ping"])), "p99_us": us(pct(sw["c_ping"], 99))},
                         "swift": {"median_us": us(med(sw["swift_ping"])), "p99_us": us(pct(sw["swift_ping"], 99))},
                         "ratio_swift_vs_c": ratio(med(sw["swift_ping"]), med(sw["c_ping"]))},
                "targets": "Swift layer <= 1.5x the C ABI per event",
            }
            st_, pg_ = M["swift"]["stream"], M["swift"]["ping"]
            # (main() binds `f` to a file later, so the module's f() formatter is not usable here.)
            log("swift: stream %.0f ev/s vs C %.0f (%.2fx per event; target <= 1.5x); ping %.1f us vs C %.1f us" % (
                st_["swift"]["median_events_per_s"], st_["c_abi"]["median_events_per_s"],
                st_["ratio_swift_vs_c_per_event"], pg_["swift"]["median_us"], pg_["c_abi"]["median_us"]))
        # ------------------------------------------------------------------------ end Swift block

        dbl.stop()
        bridges.remove(dbl)

        # ---- Footprint ------------------------------------------------------------------------
        stripped = os.path.join(a.bin, "libcursor_sdk.stripped.so")
        subprocess.run(["strip", "--strip-all", "-o", stripped, a.so], check=True)
        so_mb = os.path.getsize(stripped) / 1e6
        M["footprint"] = {
            "so_stripped_mb": so_mb, "so_unstripped_mb": os.path.getsize(a.so) / 1e6,
            "idle_rss_mb": {"ours": med(rss["ours"]) / 1024.0, "python_sdk": med(rss["python"]) / 1024.0},
            "ratio_python_vs_ours": ratio(med(rss["python"]), med(rss["ours"])),
            "targets": ".so <= 4 MB; idle host RSS <= 6 MB and >= 5x smaller than Python",
            "note": "host process RSS after launching the real bridge and one ping (bridge excluded)",
        }
    finally:
        for b in bridges:
            b.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    res["machine"] = {
        "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
        "os": os_name(), "loadavg_at_end": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print_table(M)
    print()
    print(json.dumps(res, indent=2))
    log(f"results written to {a.out}")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def f(x, nd=1):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def sf(x):
    """A signed difference: +12.3 or -4.5."""
    return "-" if x is None else f"{x:+.1f}"


def print_table(M):
    rows = []
    p = M["ping"]
    rows.append(("Ping median (us), real bridge", f(p["ours"]["median_us"]), f"raw {f(p['raw_floor']['median_us'])}",
                 f"py {f(p['python_sdk']['median_us'])}", f"{f(p['ratio_ours_vs_raw'], 2)}x raw; {f(p['speedup_vs_python'], 1)}x faster than py",
                 "<=1.2x raw, >=3x py"))
    rows.append(("  per-pair ours/raw, median (min-max)", f(p["ratio_ours_vs_raw_pairs"]["median"], 2), "", "",
                 f"{f(p['ratio_ours_vs_raw_pairs']['min'], 2)}-{f(p['ratio_ours_vs_raw_pairs']['max'], 2)} over "
                 f"{p['ratio_ours_vs_raw_pairs']['pairs']} pairs", ""))
    rows.append(("  CPU per call (us), host process", f(p["ours"]["cpu_us_per_call"]),
                 f"raw {f(p['raw_floor']['cpu_us_per_call'])}", "", f"{f(p['cpu_ratio_ours_vs_raw'], 2)}x raw", ""))
    rows.append(("  instructions per call (callgrind)", f(p["ours"]["instructions_per_call"]),
                 f"raw {f(p['raw_floor']['instructions_per_call'])}", "",
                 f"{f(p['instructions_ratio_ours_vs_raw'], 2)}x raw" if p["instructions_ratio_ours_vs_raw"] else
                 "not counted (QUICK or no valgrind)", ""))
    rows.append(("Ping p99 (us)", f(p["ours"]["p99_us"]), f"raw {f(p['raw_floor']['p99_us'])}",
                 f"py {f(p['python_sdk']['p99_us'])}", "", ""))
    s = M["startup"]
    rows.append(("Start-up to first ping (ms)", f(s["ours"]["median_ms"]), f"bare {f(s['bare_bridge']['median_ms'])}",
                 f"py {f(s['python_sdk']['median_ms'])}", f"{sf(s['ours_minus_bare_ms'])} ms vs bare; {f(s['speedup_vs_python'], 2)}x py",
                 "<= bare + 30 ms"))
    rows.append(("  ready / bare+first raw ping (ms)", f(s["ours"]["ready_median_ms"]),
                 f"bare+ping {f(s['bare_bridge']['first_raw_ping_median_ms'])}",
                 f"py launch {f(s['python_sdk']['launch_bridge_median_ms'])}",
                 f"{sf(s['ours_minus_bare_first_ping_ms'])} ms vs bare+ping", ""))
    rows.append(("  paired diff vs bare (ms)", sf(s['paired_ours_minus_bare_median_ms']),
                 f"ready {sf(s['paired_ours_ready_minus_bare_ready_median_ms'])}",
                 f"py {sf(s['paired_python_minus_bare_median_ms'])}", "median of per-repetition differences", ""))
    t = M["stream"]
    rows.append(("Stream (events/s), double", f(t["ours"]["median_events_per_s"]), f"raw {f(t['raw_reader']['median_events_per_s'])}",
                 f"py {f(t['python_sdk']['median_events_per_s'])}",
                 f"raw/ours {f(t['ratio_raw_vs_ours'], 2)} ({f(t['ratio_raw_vs_ours_pairs']['min'], 2)}-"
                 f"{f(t['ratio_raw_vs_ours_pairs']['max'], 2)}, {t['ratio_raw_vs_ours_pairs']['pairs']} pairs); "
                 f"{f(t['speedup_vs_python'], 1)}x py", ">=20x py, raw/ours<=1.25"))
    rows.append(("  CPU per event (ns), host process", f(t["ours"]["cpu_ns_per_event"]),
                 f"raw {f(t['raw_reader']['cpu_ns_per_event'])}", "",
                 f"{f(t['cpu_ratio_ours_vs_raw'], 2)}x raw", ""))
    rows.append(("  instructions per event (callgrind)", f(t["ours"]["instructions_per_event"]),
                 f"raw {f(t['raw_reader']['instructions_per_event'])}", "",
                 f"{f(t['instructions_ratio_ours_vs_raw'], 2)}x raw" if t["instructions_ratio_ours_vs_raw"] else
                 "not counted (no valgrind)", ""))
    rows.append(("Stream RSS growth (MB)", f(t["ours"]["rss_growth_mb"]), f"raw {f(t['raw_reader']['rss_growth_mb'])}",
                 f"py {f(t['python_sdk']['rss_growth_mb'])}", f"peak: {f(t['ours']['peak_rss_mb'])} / {f(t['raw_reader']['peak_rss_mb'])} / {f(t['python_sdk']['peak_rss_mb'])} MB",
                 "<= 20 MB"))
    e = M["first_event"]
    rows.append(("First event after send (ms)", f(e["ours"]["median_ms"], 2), f"raw {f(e['raw_reader']['median_ms'], 2)}",
                 f"py {f(e['python_sdk']['median_ms'], 2)}", f"{f(e['speedup_vs_python'], 1)}x py", ""))
    tr = M["tool_round_trip"]
    rows.append(("Tool round trip median (us)", f(tr["ours"]["median_us"]), "", f"py {f(tr['python_sdk']['median_us'])}",
                 f"{f(tr['speedup_vs_python'], 1)}x py", ">=3x py, <=150 us"))
    rows.append(("Tool round trip p99 (us)", f(tr["ours"]["p99_us"]), "", f"py {f(tr['python_sdk']['p99_us'])}",
                 f"conns: {tr['ours']['connections']} vs {tr['python_sdk']['connections']}", ""))
    fp = M["footprint"]
    rows.append(("Stripped .so (MB)", f(fp["so_stripped_mb"], 2), "", "", "", "<= 4 MB"))
    rows.append(("Idle host RSS (MB)", f(fp["idle_rss_mb"]["ours"]), "", f"py {f(fp['idle_rss_mb']['python_sdk'])}",
                 f"{f(fp['ratio_python_vs_ours'], 1)}x smaller", "<=6 MB, >=5x"))
    head = ("Metric", "Ours", "Floor/bare", "Python SDK", "Ratio", "Target")
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = "| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(head)) + " |"
    print(line)
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # a crashed measurement fails the run
        print(f"bench: FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
