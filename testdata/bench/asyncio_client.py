#!/usr/bin/env python3
"""The Python peer of nel's model client (issue 23), standard library only.

It sends the request bodies of a file (one JSON object a line, as
`nel-run sim-server --record` wrote them while nel ran the same samples) to
an OpenAI-compatible /chat/completions endpoint, CONCURRENCY at a time, each
worker on its own HTTP/1.1 keep-alive connection (asyncio streams), and
decodes every response's JSON to take the answer out of it: the work of an
asyncio evaluation client with nothing else (no scoring, no journal, no
results file). The Go benchmarks in cmd/nel-run measure its CPU time and
peak memory from outside, as they measure nel-run's.

It prints one JSON line: {"samples": N, "failed": F, "seconds": S}.
"""

import argparse
import asyncio
import json
import resource
import sys
import time
import urllib.parse


async def read_chunked(reader):
    parts = []
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readline()


async def worker(host, port, path, bodies, next_index, results):
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json\r\n"
    )
    try:
        while True:
            i = next_index[0]
            if i >= len(bodies):
                return
            next_index[0] = i + 1
            body = bodies[i]
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            status_line = await reader.readline()
            status = int(status_line.split()[1])
            length, close, chunked = 0, False, False
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
                elif name == "transfer-encoding" and "chunked" in value.lower():
                    chunked = True
            data = await read_chunked(reader) if chunked else await reader.readexactly(length)
            ok = False
            if status == 200:
                doc = json.loads(data)
                choices = doc.get("choices") or []
                ok = bool(choices) and bool(choices[0].get("message", {}).get("content"))
            results.append(ok)
            if close:
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
    finally:
        writer.close()


async def run(url, bodies, concurrency):
    u = urllib.parse.urlsplit(url.rstrip("/") + "/chat/completions")
    next_index, results = [0], []
    start = time.monotonic()
    await asyncio.gather(*(
        worker(u.hostname, u.port or 80, u.path, bodies, next_index, results)
        for _ in range(min(concurrency, len(bodies)))
    ))
    return results, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8123/v1")
    ap.add_argument("--bodies", required=True, help="request bodies, one JSON line each")
    ap.add_argument("--concurrency", type=int, required=True)
    args = ap.parse_args()
    # A socket per connection: as nel-run does, raise the open-files limit.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open(args.bodies, "rb") as f:
        bodies = [line.rstrip(b"\n") for line in f if line.strip()]
    results, seconds = asyncio.run(run(args.url, bodies, args.concurrency))
    failed = sum(1 for ok in results if not ok)
    print(json.dumps({"samples": len(results), "failed": failed, "seconds": round(seconds, 4)}))
    return 0 if len(results) == len(bodies) else 1


if __name__ == "__main__":
    sys.exit(main())
