#!/usr/bin/env python3
"""Captures the fuzz targets' seed corpus (fuzz/seeds/<target>/) from real traffic.

Runs the pinned real bridge and the bridge double, offline, and records what crosses the
wire: ready lines, manifests, unary error bodies, stream bodies (frames) and the frames'
payloads, and the callback requests the bridges send (the real bridge's CallStore, the double's
`call` for CallCustomTool). Tokens in callback requests become `@TOKEN@`, which the callback
target replaces with its server's token.

    python3 fuzz/capture.py --bridge .cache/bridge/cursor-sdk-1.1.0/bridge/bin/cursor-sdk-bridge \
        --double target/debug/cursor-sdk-bridge-double

Takes about 40 s (the real bridge's offline run fails after ~17 s). Standard library only.
"""

import argparse
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
CB_TOKEN = "capture-callback-token-0123456789abcdefghijk"


# Options as callers write them (the library's tests and examples): not wire traffic, they are
# the caller's input; the shorthands, both key styles, the request-level keys and client options.
OPTIONS = [
    "",
    "{}",
    '{"model":"composer-2","api_key":"k","cwd":".","mode":"plan","tools":["read"],'
    '"local":{"settingSources":["project","ALL"],"autoReview":true},"cloud":{"env":{"type":"pool","name":"p"}},'
    '"mcpServers":{"s":{"http":{"url":"http://x","type":"sse"}}},'
    '"agents":{"helper":{"description":"d","prompt":"p","model":"inherit"}}}',
    '{"model":{"id":"composer-2","params":[{"id":"thinking","value":"high"}]},"local":{"cwd":["/tmp"],"store":{"type":"custom"},'
    '"customTools":{"echo":{"description":"Echo","inputSchema":{"type":"object"}}}},"idempotencyKey":"k1","reclaimStaleRuns":true}',
    '{"cloud":{"repos":[{"url":"https://github.com/a/b","startingRef":"main"}],"autoCreatePr":true},"apiKey":"dummy","name":"n"}',
    '{"runtime":"local","cwd":"/tmp","limit":10,"cursor":"c","includeArchived":true}',
    '{"bridgePath":"/usr/bin/cursor-sdk-bridge","startupTimeoutMs":30000,"requestTimeoutMs":60000,"maxRetries":2,'
    '"bridgeEnv":{"A":"b"},"localStore":{"type":"jsonl","rootDir":"/tmp/s"},"toolTimeoutMs":1000,"bridgeArgs":["--verbose"]}',
    '{"bridgeUrl":"http://127.0.0.1:1234","bridgeToken":"t0k","eager":true,"verbose":false,"maxFrameBytes":1048576}',
    '{"text":"look at this","images":[{"data":{"data":"aGk=","mimeType":"image/png"}}]}',
    '{"local":{"cwdd":"/x"}}',
    "hello, plain text",
]


def seed(target, data, prefix=b""):
    """Writes one seed file, named by its hash (libFuzzer's convention)."""
    if isinstance(data, str):
        data = data.encode()
    data = prefix + data
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def envelope(payload, flags=0):
    return bytes([flags]) + struct.pack(">I", len(payload)) + payload


def pb_string(tag, s):
    b = s.encode() if isinstance(s, str) else s
    return pb_varint(tag << 3 | 2) + pb_varint(len(b)) + b


def pb_varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def frames_of(body):
    """Splits a Connect stream body into (flags, payload) frames."""
    out, i = [], 0
    while i + 5 <= len(body):
        flags, n = body[i], struct.unpack(">I", body[i + 1 : i + 5])[0]
        out.append((flags, body[i + 5 : i + 5 + n]))
        i += 5 + n
    return out


class Bridge:
    """A launched bridge: its ready line and token; killed (whole process group) on exit."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=env, start_new_session=True,
        )
        self.ready_line = None
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stderr.readline().decode()
            if line.startswith("cursor-sdk-bridge ready "):
                self.ready_line = line.rstrip("\n")
                break
        if not self.ready_line:
            self.close()
            raise SystemExit(f"{argv[0]}: no ready line")
        # Stderr must be drained for the bridge's whole life.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        ready = json.loads(self.ready_line.split(" ", 2)[2])
        self.port = ready["port"]
        with open(ready["authTokenFile"]) as f:
            self.token = f.read().strip()

    def call(self, path, body, ctype="application/json", timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if isinstance(body, str):
            body = body.encode()
        conn.request("POST", path, body, {"Content-Type": ctype, "Authorization": f"Bearer {self.token}"})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, data

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


class Recorder:
    """A loopback server that records raw callback requests and answers `{}` to each."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buf = b""
        conn.settimeout(5)
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                # One request: a head, then a chunked body ending in 0\r\n\r\n, or a length.
                while b"\r\n\r\n" in buf:
                    head, rest = buf.split(b"\r\n\r\n", 1)
                    lower = head.lower()
                    if b"transfer-encoding: chunked" in lower:
                        end = rest.find(b"0\r\n\r\n")
                        if end < 0:
                            break
                        n = len(head) + 4 + end + 5
                    else:
                        length = 0
                        for line in lower.split(b"\r\n"):
                            if line.startswith(b"content-length:"):
                                length = int(line.split(b":")[1])
                        if len(rest) < length:
                            break
                        n = len(head) + 4 + length
                    self.requests.append(buf[:n])
                    buf = buf[n:]
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        except OSError:
            return
        finally:
            conn.close()


def capture_real(bridge_bin, home):
    rec = Recorder()
    env = dict(os.environ, HOME=home, CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON='[{"id":"composer-2"}]')
    env.pop("CURSOR_API_KEY", None)
    b = Bridge([bridge_bin], env)
    try:
        seed("ready_manifest", b.ready_line, b"\x00")
        svc = "/sdk.v1.SdkAgentService/"
        unary = [
            ("/sdk.v1.SdkBridgeControlService/Ping", "{}"),
            ("/sdk.v1.SdkBridgeControlService/GetVersion", "{}"),
            ("/sdk.v1.SdkCursorService/Me", "{}"),
            ("/sdk.v1.SdkCursorService/ListModels", '{"options":{"apiKey":"dummy"}}'),
            (svc + "GetAgent", '{"agentId":"agent-nope"}'),
            (svc + "GetRun", '{"runId":"run-nope"}'),
            (svc + "ArchiveAgent", '{"agentId":"agent-nope"}'),
            (svc + "CreateAgent", '{"options":{"tools":{"names":["nope"]}}}'),
            (svc + "Nope", "{}"),
            ("/sdk.v1.SdkBridgeControlService/Ping", "{not json"),
        ]
        for path, body in unary:
            status, data = b.call(path, body)
            seed("connect_error", data, struct.pack(">H", status))
        status, data = b.call("/sdk.v1.SdkBridgeControlService/Ping", "{}", ctype="text/plain")
        seed("connect_error", data, struct.pack(">H", status))
        status, data = b.call(svc + "CreateAgent", json.dumps({"options": {"model": {"id": "composer-2"}, "local": {"cwd": [home]}}}))
        agent = json.loads(data)["agentId"]
        # Streams in binary proto, as the library reads them: the offline run (~17 s) and an
        # unknown agent (an error end frame).
        for agent_id in [agent, "agent-nope"]:
            req = pb_string(1, agent_id) + pb_string(2, pb_string(1, "hello"))
            status, body = b.call(svc + "Send", envelope(req), ctype="application/connect+proto")
            stream(body)
    finally:
        b.close()
    # The store callbacks of a custom store.
    b = Bridge([bridge_bin, "--local-store", '{"type":"custom"}',
                "--store-callback-url", f"http://127.0.0.1:{rec.port}/",
                "--store-callback-auth-token", CB_TOKEN], env)
    try:
        b.call(svc + "ListAgents", "{}")
        b.call(svc + "CreateAgent", json.dumps({"options": {"local": {"cwd": [home]}}}))
        b.call(svc + "GetAgent", '{"agentId":"agent-nope"}')
    finally:
        b.close()
    return rec


def stream(body):
    seed("frame", body, b"\x00\x00")
    seed("frame", body, b"\x03\x2a")
    for flags, payload in frames_of(body):
        if flags & 2:
            seed("connect_error", payload, struct.pack(">H", 200))
        elif payload:
            seed("struct_json", payload)


def capture_double(double_bin, home, rec):
    env = dict(os.environ, HOME=home, TMPDIR=home)
    b = Bridge([double_bin], env)
    try:
        seed("ready_manifest", b.ready_line, b"\x00")
        svc = "/sdk.v1.SdkAgentService/"
        _, data = b.call(svc + "CreateAgent", json.dumps({"options": {"model": {"id": "composer-2"}, "local": {"cwd": [home]}}}))
        agent = json.loads(data)["agentId"]
        for text in ["scenario:normal", "scenario:tool", "scenario:fail", "scenario:unknown"]:
            req = pb_string(1, agent) + pb_string(2, pb_string(1, text))
            _, body = b.call(svc + "Send", envelope(req), ctype="application/connect+proto")
            stream(body)
    finally:
        b.close()
    # Tool and store callbacks as the double sends them (the bridge's client, connect-es).
    calls = [
        ("tool", {"toolName": "echo", "args": {"text": "hi"}, "toolCallId": "call-1", "agentId": "agent-1"}),
        ("store", {"substore": "agents", "method": "get", "input": {"agentId": "agent-1"}}),
    ]
    for service, body in calls:
        subprocess.run([double_bin, "call", "--url", f"http://127.0.0.1:{rec.port}/", "--token", CB_TOKEN,
                        "--service", service, "--json", json.dumps(body)], check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--double", required=True)
    a = ap.parse_args()
    shutil.rmtree(SEEDS, ignore_errors=True)
    home = tempfile.mkdtemp(prefix="cursor-fuzz-capture-")
    try:
        rec = capture_real(os.path.abspath(a.bridge), home)
        capture_double(os.path.abspath(a.double), home, rec)
        time.sleep(0.2)
        for raw in rec.requests:
            seed("callback", raw.replace(CB_TOKEN.encode(), b"@TOKEN@"))
        # Two requests on one kept-alive connection.
        if len(rec.requests) >= 2:
            seed("callback", (rec.requests[0] + rec.requests[-1]).replace(CB_TOKEN.encode(), b"@TOKEN@"))
        for text in OPTIONS:
            seed("options", text)
        old = os.path.join(os.path.dirname(os.path.abspath(a.bridge)), "../../../cursor-sdk-1.0.26/bridge/manifest.json")
        if os.path.exists(old):
            with open(old, "rb") as f:
                seed("ready_manifest", f.read(), b"\x01")
        manifest = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.bridge))), "manifest.json")
        with open(manifest, "rb") as f:
            seed("ready_manifest", f.read(), b"\x01")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"callback requests: {len(rec.requests)}")
    for t in sorted(os.listdir(SEEDS)):
        files = os.listdir(os.path.join(SEEDS, t))
        size = sum(os.path.getsize(os.path.join(SEEDS, t, f)) for f in files)
        print(f"{t}: {len(files)} seeds, {size} bytes")


if __name__ == "__main__":
    main()
