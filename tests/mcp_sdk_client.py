"""End-to-end test of `lspc mcp` with the official MCP Python SDK client (PyPI `mcp` 2.x).

Usage: python3 mcp_sdk_client.py LSPC_BINARY MODE   (MODE: auto | legacy)

Creates a Python (pyright) and a C (clangd) workspace in one root, starts `lspc mcp` through
`stdio_client`, initializes (auto: server/discover probe -> 2026-07-28; legacy: initialize at the
latest handshake version), lists tools, calls each tool, reads and subscribes to resources, and
exits non-zero on any mismatch. Every wait is bounded.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile

from mcp import Client, StdioServerParameters

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message, file=sys.stderr)


def structured(result):
    return result.structured_content or {}


async def call(client, name, arguments):
    result = await asyncio.wait_for(client.call_tool(name, arguments), 120)
    text = "".join(getattr(item, "text", "") for item in result.content)
    check(not result.is_error, f"{name} {arguments}: isError: {text}")
    return structured(result), text


async def main(binary, mode):
    root = tempfile.mkdtemp(prefix="lspc-sdk-")
    os.mkdir(os.path.join(root, ".git"))
    with open(os.path.join(root, "app.py"), "w") as f:
        f.write(
            "class Base:\n    pass\n\n\nclass Child(Base):\n    pass\n\n\n"
            "def greet(name: str) -> str:\n    return 'hi ' + name\n\n\n"
            "print(greet('a'))\nbroken: int = 'text'\n"
        )
    with open(os.path.join(root, "main.c"), "w") as f:
        f.write(
            "int add(int a, int b) { return a + b; }\n\n"
            "int main(void) {\n    return add(1, 2);\n}\n"
        )
    with open(os.path.join(root, "compile_flags.txt"), "w") as f:
        f.write("-std=c11\n")
    params = StdioServerParameters(command=binary, args=["--root", root, "mcp"])
    try:
        async with Client(params, mode=mode, read_timeout_seconds=120) as client:
            version = client.protocol_version
            expected = "2026-07-28" if mode == "auto" else "2025-11-25"
            check(version == expected, f"negotiated {version}, expected {expected}")
            tools = await client.list_tools()
            names = [tool.name for tool in tools.tools]
            for name in ["definition", "references", "hover", "document_symbols",
                         "workspace_symbols", "diagnostics"]:
                check(name in names, f"tool {name} not listed: {names}")
            for tool in tools.tools:
                check(tool.output_schema is not None, f"{tool.name} has no outputSchema")

            # Python through pyright.
            data, _ = await call(client, "diagnostics", {"file": "app.py"})
            diags = data.get("files", [{}])[0].get("diagnostics", [])
            check(any(d.get("line") == 14 and d.get("severity") == "error" for d in diags),
                  f"app.py diagnostics: {diags}")
            data, _ = await call(client, "definition", {"file": "app.py", "line": 13, "symbol": "greet"})
            locations = data.get("locations", [])
            check(any(l.get("path") == "app.py" and l.get("line") == 9 for l in locations),
                  f"definition of greet: {locations}")
            data, _ = await call(client, "references", {"file": "app.py", "line": 9, "symbol": "greet"})
            lines = sorted(l.get("line") for l in data.get("locations", []))
            check(lines == [9, 13], f"references of greet: {lines}")
            data, text = await call(client, "hover", {"file": "app.py", "line": 9, "symbol": "greet"})
            check("greet" in text and "str" in text, f"hover of greet: {text}")
            data, _ = await call(client, "document_symbols", {"file": "app.py"})
            symbol_names = [s.get("name") for s in data.get("symbols", [])]
            check({"Base", "Child", "greet"} <= set(symbol_names), f"document symbols: {symbol_names}")
            data, _ = await call(client, "workspace_symbols", {"query": "greet", "file": "app.py"})
            check(any(s.get("name") == "greet" for s in data.get("symbols", [])),
                  f"workspace symbols: {data}")
            if "call_hierarchy" in names:
                data, _ = await call(client, "call_hierarchy",
                                     {"file": "app.py", "line": 9, "symbol": "greet", "direction": "incoming"})
                check(len(data.get("items", [])) == 1, f"call hierarchy: {data}")
            if "signature_help" in names:
                await call(client, "signature_help", {"file": "app.py", "line": 13, "column": 13})

            # C through clangd.
            if shutil.which("clangd"):
                data, _ = await call(client, "definition", {"file": "main.c", "line": 4, "symbol": "add"})
                check(any(l.get("path") == "main.c" and l.get("line") == 1 for l in data.get("locations", [])),
                      f"definition of add: {data}")
                data, _ = await call(client, "diagnostics", {"file": "main.c"})
                check(data.get("files", [{}])[0].get("diagnostics") == [], f"main.c diagnostics: {data}")
                data, text = await call(client, "hover", {"file": "main.c", "line": 1, "symbol": "add"})
                check("int" in text, f"hover of add: {text}")

            # A failure is an isError result with an actionable message.
            result = await client.call_tool("hover", {"file": "../outside.py", "line": 1, "column": 1})
            check(result.is_error, "a file outside the root must give isError")

            # Resources.
            resources = await client.list_resources()
            uris = sorted(str(r.uri) for r in resources.resources)
            check(uris == ["lsp://diagnostics", "lsp://servers"], f"resources: {uris}")
            servers = await client.read_resource("lsp://servers")
            text = servers.contents[0].text
            check('"pyright"' in text, f"lsp://servers: {text[:200]}")
            file_diags = await client.read_resource("lsp://diagnostics/app.py")
            check("broken" in file_diags.contents[0].text or '"line": 14' in file_diags.contents[0].text,
                  f"lsp://diagnostics/app.py: {file_diags.contents[0].text[:300]}")
            if mode == "legacy":
                await client.subscribe_resource("lsp://diagnostics/app.py")
            else:
                async with asyncio.timeout(30):
                    async with client.listen(resource_subscriptions=["lsp://diagnostics/app.py"]) as sub:
                        check("lsp://diagnostics/app.py" in json.dumps(str(sub.honored)),
                              f"listen honored: {sub.honored}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    binary, mode = sys.argv[1], sys.argv[2]
    asyncio.run(asyncio.wait_for(main(binary, mode), 280))
    if FAILURES:
        print(f"{len(FAILURES)} mismatches", file=sys.stderr)
        sys.exit(1)
    print(f"ok ({mode})")
