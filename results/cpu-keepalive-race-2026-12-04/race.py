"""Keep-alive race: reuse a pooled connection just as vLLM's server (uvicorn, 5-s idle keep-alive) closes it."""
import asyncio, collections, sys, traceback
import aiohttp

URL = sys.argv[1]
BODY = {"model": "tiny", "prompt": "w1 w2", "max_tokens": 1}

async def one(offset: float, rounds: int, out: collections.Counter) -> None:
    conn = aiohttp.TCPConnector(limit=1, keepalive_timeout=60)
    async with aiohttp.ClientSession(connector=conn) as s:
        for _ in range(rounds):
            try:
                async with s.post(URL, json=BODY) as r:
                    await r.read()
                    out[f"{r.status}"] += 1
            except Exception as e:
                out[f"{type(e).__name__}: {e}"] += 1
            await asyncio.sleep(offset)

async def main() -> None:
    out: collections.Counter = collections.Counter()
    offsets = [4.90 + 0.004 * i for i in range(50)]  # 4.900 .. 5.096 s idle before reuse
    await asyncio.gather(*(one(o, 8, out) for o in offsets))
    print(dict(out))

asyncio.run(main())
