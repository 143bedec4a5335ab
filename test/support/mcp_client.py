"""Drives an MCP server over stdio with the official Python SDK (`mcp` on
PyPI), for test/ex_bashkit/mcp/stdio_test.exs.

Usage: python mcp_client.py PLAN_JSON. The plan names the server's command
and the steps to take; one JSON object is printed: what the server said in
`initialize` and each step's outcome.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client


def content_text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def step(session, kind, *args):
    if kind == "list_tools":
        result = await session.list_tools()
        return {"tools": [{"name": t.name, "schema": t.input_schema} for t in result.tools]}
    if kind == "call_tool":
        name, arguments = args[0], args[1]
        timeout = args[2] if len(args) > 2 else None
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=timeout)
        except Exception as error:  # a timeout, or a JSON-RPC error the SDK raises
            return {"raised": type(error).__name__, "message": str(error)}
        return {"is_error": result.is_error, "text": content_text(result)}
    if kind == "ping":
        await session.send_ping()
        return {"pong": True}
    raise ValueError(f"unknown step {kind}")


async def main(plan):
    server = StdioServerParameters(
        command=plan["command"], args=plan["args"], cwd=plan["cwd"], env=plan["env"]
    )
    with open(plan["stderr"], "w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                outcomes = [await step(session, *s) for s in plan["steps"]]
    return {
        "protocol_version": init.protocol_version,
        "server": {"name": init.server_info.name, "version": init.server_info.version},
        "instructions": init.instructions,
        "steps": outcomes,
    }


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.loads(sys.argv[1]))))
