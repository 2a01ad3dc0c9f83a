#!/usr/bin/env python3
"""Ask a real language server for the diagnostics it pushes for some files (stdlib only).

Used to (re)generate fixtures/workspaces/*/EXPECTED.md: it prints, for every opened file, the
last `textDocument/publishDiagnostics` batch the server sent, converted to 1-based lines and
1-based columns counted in Unicode characters (the server's UTF-16 columns converted back).

Usage: scripts/lsp-probe.py --root DIR [--settle SECONDS] [--timeout SECONDS] FILE... -- CMD ARG...

It answers every server->client request the way a polite client does (null per configuration
item, null for registerCapability / workDoneProgress/create) and waits until no publish and no
active progress for --settle seconds (default 3), bounded by --timeout (default 60).
"""

import json
import os
import pathlib
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

LANGUAGE_IDS = {".py": "python", ".c": "c", ".h": "c", ".ts": "typescript", ".tsx": "typescriptreact"}


def to_uri(path):
    return pathlib.Path(path).resolve().as_uri()


def from_uri(uri):
    return urllib.request.url2pathname(urllib.parse.urlparse(uri).path)


def utf16_to_char_column(line_text, utf16_col):
    """0-based UTF-16 column -> 0-based character column."""
    units = 0
    for index, ch in enumerate(line_text):
        if units >= utf16_col:
            return index
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1 :]
    root, settle, timeout, files = None, 3.0, 60.0, []
    i = 0
    while i < len(opts):
        if opts[i] == "--root":
            root, i = opts[i + 1], i + 2
        elif opts[i] == "--settle":
            settle, i = float(opts[i + 1]), i + 2
        elif opts[i] == "--timeout":
            timeout, i = float(opts[i + 1]), i + 2
        else:
            files.append(opts[i])
            i += 1
    root = str(pathlib.Path(root).resolve())
    files = [str(pathlib.Path(root, f).resolve()) for f in files]

    proc = subprocess.Popen(command, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    lock = threading.Lock()
    state = {"last_event": time.monotonic(), "progress": set(), "published": {}, "responses": {},
             "server_info": None, "position_encoding": None}

    def send(message):
        body = json.dumps(message).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    def reader():
        while True:
            headers = {}
            while True:
                line = proc.stdout.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if b":" in line:
                    key, value = line.split(b":", 1)
                    headers[key.strip().lower()] = value.strip()
            if b"content-length" not in headers:
                continue
            message = json.loads(proc.stdout.read(int(headers[b"content-length"])))
            handle(message)

    def handle(message):
        method = message.get("method")
        with lock:
            state["last_event"] = time.monotonic()
            if method is None:
                state["responses"][message.get("id")] = message
                return
            params = message.get("params") or {}
            if method == "textDocument/publishDiagnostics":
                state["published"][from_uri(params["uri"])] = params
            elif method == "$/progress":
                kind = (params.get("value") or {}).get("kind")
                token = json.dumps(params.get("token"))
                if kind == "begin":
                    state["progress"].add(token)
                elif kind == "end":
                    state["progress"].discard(token)
        if "id" in message:
            if method == "workspace/configuration":
                result = [None] * len(params.get("items", []))
            else:
                result = None
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    threading.Thread(target=reader, daemon=True).start()

    def request(req_id, method, params):
        message = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:  # some servers reject "params": null on parameterless methods
            message["params"] = params
        send(message)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with lock:
                if req_id in state["responses"]:
                    return state["responses"][req_id]
            time.sleep(0.01)
        sys.exit(f"lsp-probe: no answer to {method} within {timeout} s")

    init = request(1, "initialize", {
        "processId": os.getpid(),
        "rootUri": to_uri(root),
        "workspaceFolders": [{"uri": to_uri(root), "name": os.path.basename(root)}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": True},
            "workspace": {"configuration": True, "workspaceFolders": True},
            "textDocument": {"publishDiagnostics": {"relatedInformation": True, "versionSupport": True,
                                                    "codeDescriptionSupport": True, "dataSupport": True,
                                                    "tagSupport": {"valueSet": [1, 2]}}},
        },
    })
    result = init.get("result") or {}
    state["server_info"] = result.get("serverInfo")
    state["position_encoding"] = (result.get("capabilities") or {}).get("positionEncoding", "utf-16")
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    texts = {}
    for path in files:
        texts[path] = pathlib.Path(path).read_text(encoding="utf-8")
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": to_uri(path), "languageId": LANGUAGE_IDS.get(pathlib.Path(path).suffix, "plaintext"),
            "version": 1, "text": texts[path]}}})

    start = time.monotonic()
    while True:
        time.sleep(0.05)
        with lock:
            quiet = time.monotonic() - state["last_event"]
            done = all(p in state["published"] for p in files) and not state["progress"] and quiet >= settle
        if done or time.monotonic() - start > timeout:
            break

    out = {"server_info": state["server_info"], "position_encoding": state["position_encoding"],
           "timed_out": not done, "files": {}}
    with lock:
        for path in files:
            lines = texts[path].split("\n")
            params = state["published"].get(path)
            entries = []
            for d in (params or {}).get("diagnostics", []):
                start_pos, end_pos = d["range"]["start"], d["range"]["end"]

                def char_col(pos):
                    text = lines[pos["line"]] if pos["line"] < len(lines) else ""
                    return utf16_to_char_column(text, pos["character"]) + 1

                entries.append({
                    "line": start_pos["line"] + 1, "column": char_col(start_pos),
                    "end_line": end_pos["line"] + 1, "end_column": char_col(end_pos),
                    "utf16": [start_pos["line"], start_pos["character"], end_pos["line"], end_pos["character"]],
                    "severity": d.get("severity"), "source": d.get("source"), "code": d.get("code"),
                    "message": d.get("message"), "tags": d.get("tags"),
                })
            out["files"][os.path.relpath(path, root)] = {
                "published": params is not None,
                "version": (params or {}).get("version"),
                "diagnostics": entries,
            }
    print(json.dumps(out, indent=2, ensure_ascii=False))
    try:
        request(2, "shutdown", None)
        send({"jsonrpc": "2.0", "method": "exit"})
        proc.wait(timeout=5)
    except (SystemExit, subprocess.TimeoutExpired, BrokenPipeError):
        pass
    finally:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    main()
