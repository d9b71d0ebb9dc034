"""What lens's model gateway adds to a memory system's model call.

The same chat request (a system and a user message, about 150 prompt tokens) to the scripted
model, which answers at once, three ways: straight through the model stack (``StackClient``, what
lens's own calls cost), through the gateway with the openai SDK's async client (what an adapter
calling the gateway pays: the SDK, HTTP on loopback, aiohttp, JSON both ways, the stack), and
with a raw aiohttp client to the gateway (the SDK left out). The gateway's overhead is the
difference between the gateway rows and the direct row. Each row is timed ``--repeats`` times
over ``--calls`` sequential calls (one in flight: a latency, not a throughput figure), after a
warm-up.

    python -m bench.gateway --calls 300 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Awaitable, Callable

import aiohttp
import anyio
import openai

from bench.common import machine_line, md_table, spread
from lens.data.config import CacheConfig, ModelConfig
from lens.models.base import CompletionRequest, Message
from lens.models.runtime import ModelRuntime
from lens.runner.gateway.server import ModelGateway

PROMPT = "Extract the facts of this record as JSON.\n" + "The widget count rose to 41. " * 20
MODEL = ModelConfig.model_validate({"model": "scripted/replay",
                                    "options": {"replies": [{"text": '{"facts": []}'}]}})


async def _time(calls: int, one: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await one()
    return (time.perf_counter() - started) / calls


async def main(calls: int, repeats: int) -> dict[str, list[float]]:
    runtime = ModelRuntime(cache=CacheConfig(enabled=False))
    gateway = ModelGateway(runtime, embeddings=False)
    await gateway.start()
    access = gateway.grant("bench", "bench|s|0", 0, MODEL)
    direct = runtime.client(MODEL)
    request = CompletionRequest(messages=[Message(role="system", content="You extract facts."),
                                          Message(role="user", content=PROMPT)], role="adapter")
    body = {"model": "m", "messages": [{"role": "system", "content": "You extract facts."},
                                       {"role": "user", "content": PROMPT}]}
    headers = {"Authorization": f"Bearer {access.api_key}"}
    sdk = openai.AsyncOpenAI(base_url=access.base_url, api_key=access.api_key, max_retries=0)
    session = aiohttp.ClientSession()

    async def via_sdk() -> object:
        return await sdk.chat.completions.create(model="m", messages=body["messages"])  # type: ignore[arg-type]

    async def via_http() -> object:
        async with session.post(f"{access.base_url}/chat/completions", json=body,
                                headers=headers) as reply:
            return json.loads(await reply.read())

    rows = {"direct (StackClient)": lambda: direct.complete(request),
            "gateway, raw aiohttp client": via_http,
            "gateway, openai SDK": via_sdk}
    results: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for one in rows.values():
            await _time(max(20, calls // 10), one)  # warm-up
        for _ in range(repeats):
            for name, one in rows.items():
                results[name].append(await _time(calls, one))
    finally:
        await session.close()
        await sdk.close()
        await gateway.aclose()
        await runtime.aclose()
    return results


def report(results: dict[str, list[float]], calls: int) -> str:
    base = spread(results["direct (StackClient)"]).median
    rows = []
    for name, values in results.items():
        s = spread([v * 1000 for v in values])
        rows.append([name, s.fmt(3, " ms"), f"{(s.median / 1000 - base) * 1000:+.3f} ms"])
    return md_table(["path", f"per call ({calls} sequential calls)", "over direct"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    out = anyio.run(main, args.calls, args.repeats)
    print(machine_line())
    print(report(out, args.calls))
