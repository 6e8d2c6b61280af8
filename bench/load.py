"""Many users at once: concurrent sessions against one real ``streamlit run app.py``.

    python bench/load.py                     # 20 protocol users + 3 browser tabs, 45 s; table + results/load.json
    python bench/load.py --sessions 40 --browsers 5 --duration 60
    python bench/load.py --url http://127.0.0.1:8501   # drive a server that is already running

Two kinds of users, all at once, each its own Streamlit session:

- **protocol users** (``--sessions``): a websocket client each, speaking Streamlit's own protocol with
  its own protobuf messages (``BackMsg.rerun_script`` out, ``ForwardMsg`` deltas in), exactly what a
  browser tab sends and receives, without drawing anything. Cheap enough that 20-40 of them load the
  server, not this machine's two cores.
- **browser users** (``--browsers``): tabs of one headless Chromium (Debian's, through Playwright) doing
  the same, to catch what only a browser shows: console errors, failed requests, rendered exceptions.
  (20 Chromium tabs on a 2-core machine measure Chromium: each first page load costs ~1 s of CPU, so
  20 opens take 20-25 s however fast the server is.)

Every user opens a different shared link (page and plan), then, for a bounded time and number of
steps, alternates: change the sidebar's TP, move to another page (sidebar links), and every fifth step
opens the next shared link in a new session. A step's latency is the time from the ``rerun_script``
request to the server's ``script_finished`` (an open: from connecting / navigating to the first
``script_finished``). Each protocol user also checks that the Budget numbers it got are kvplan's for
*its own* plan (no state leaks between sessions).

Errors: an exception element, a ``script_finished`` other than success, wrong numbers, a step without
an answer in time; in browsers also a console error, an uncaught page error, a failed request or HTTP
error. Known and harmless, so only counted: Streamlit's probe of ``/<page>/_stcore/health`` (404), its
"page ... does not seem to exist" notice on the first request a fresh server gets for a non-default
page (the legacy ``pages/`` folder quirk), and a request the tab itself cancelled (``net::ERR_ABORTED``)
by opening the next link while the old page was still fetching a script chunk. The server binds 127.0.0.1 on a free port and is
killed at the end. ``drive()`` is also what ``tests/e2e/test_load.py`` runs (shorter).
"""

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CHROME, CHROME_ARGS, machine, server, stats, wait_healthy  # noqa: E402

CMD = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 32k --kv-cache-dtype fp8"
# (page path, query string of the shared link, heading the page shows). Budget is the default page: "/".
LINKS = [
    ("", "v=1&m=llama-3.1-70b&tp=4&len=32768&conc=16&kvd=fp8", "Budget"),
    ("paging", "v=1&m=qwen3-8b&pl=5,3,8,120,45,300&bs=16&pfx=4", "Paging"),
    ("parallelism", "v=1&m=deepseek-v3&g=H200&tp=8", "Parallelism"),
    ("gpus", "v=1&m=llama-3.1-8b&len=8192&conc=8", "GPUs"),
    ("model", "v=1&m=gemma-3-27b-it", "Model"),
    ("import", f"v=1&cmd={quote(CMD)}", "Import a serving command"),
    ("", "v=1&m=qwen3-30b-a3b&g=A100-80GB&tp=2&len=8192", "Budget"),
    ("validate", "v=1&m=llama-3.2-1b", "Validate"),
    ("", "v=1&tp=abc&m=no-such-model", "Budget"),  # a tampered link: warnings, never an error
    ("paging", "v=1&m=mixtral-8x7b&pm=uniform&pd=64:128:8192:7", "Paging"),
]
TOUR = ["Paging", "Parallelism", "GPUs", "Model", "Import", "Budget"]  # sidebar links, in turn
HEADINGS = {"Import": "Import a serving command"}
TP_VALUES = (2, 8, 4, 1)
SHOTS = os.environ.get("KVPLAN_LOAD_SHOTS")  # a folder: screenshot each failed browser step there
KNOWN = (re.compile(r"/[\w-]+/_stcore/(health|host-config)$"),)


def _known(text: str) -> bool:
    return any(k.search(text) for k in KNOWN)


class Wire:
    """One tab's websocket traffic, decoded: when reruns were requested and when the server finished them."""

    def __init__(self, errors: list, tag: str):
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.BackMsg, self.ForwardMsg = BackMsg, ForwardMsg
        self.sent: list[float] = []
        self.finished: list[float] = []
        self.errors, self.tag = errors, tag

    def attach(self, ws) -> None:
        if not ws.url.endswith("/_stcore/stream"):
            return
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        if isinstance(payload, bytes | bytearray):
            msg = self.BackMsg.FromString(bytes(payload))
            if msg.WhichOneof("type") == "rerun_script":
                self.sent.append(time.monotonic())

    def _received(self, payload) -> None:
        if not isinstance(payload, bytes | bytearray):
            return
        msg = self.ForwardMsg.FromString(bytes(payload))
        kind = msg.WhichOneof("type")
        if kind == "script_finished":
            self.finished.append(time.monotonic())
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            if element.WhichOneof("type") == "exception":
                self.errors.append(f"{self.tag}: exception in the app: {element.exception.type}: "
                                   f"{element.exception.message[:200]}")

    async def requested(self, since: float, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if any(t >= since for t in self.sent):
                return True
            await asyncio.sleep(0.01)
        return False

    async def answered(self, since: float, timeout_s: float, first_request: bool = True) -> float:
        """Seconds from the first rerun request sent after ``since`` (or ``since`` itself, for a page
        load) to the first script_finished after that request."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            start = next((t for t in self.sent if t >= since), None) if first_request else since
            if start is not None:
                done = next((t for t in self.finished if t >= start), None)
                if done is not None:
                    return done - start
            await asyncio.sleep(0.01)
        sent = any(t >= since for t in self.sent)
        raise TimeoutError(f"no answer in {timeout_s:.0f} s ({'a rerun was requested' if sent else 'no request'})")


async def _session(i: int, context, base: str, deadline: float, max_steps: int, out: dict, timeout_ms: float):
    from playwright.async_api import expect

    tag = f"session {i}"
    errors, known = out["errors"], out["known"]
    page = await context.new_page()  # a tab: its own websocket, so its own Streamlit session
    page.set_default_timeout(timeout_ms)
    wire = Wire(errors, tag)
    page.on("websocket", wire.attach)

    leaving = [False]  # this tab is loading a new link: requests the old page had in flight are cancelled

    def note(text: str) -> None:
        # A tab that opens a new link while the old page still fetches a script chunk (Plotly's is 4.7 MB)
        # makes Chromium cancel that request (net::ERR_ABORTED): the user's doing, not a server failure.
        cancelled = leaving[0] and text.startswith("request failed:") and text.endswith("(net::ERR_ABORTED)")
        (known if cancelled or _known(text) else errors).append(f"{tag}: {text}")

    # ("Failed to load resource" console lines repeat what the response / requestfailed events name.)
    page.on("console", lambda m: note(f"console {m.type}: {m.text[:200]}")
            if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
    page.on("pageerror", lambda e: note(f"page error: {str(e)[:200]}"))
    page.on("requestfailed", lambda r: note(f"request failed: {r.url[:120]} ({r.failure})"))
    page.on("response", lambda r: note(f"HTTP {r.status}: {r.url[:120]}") if r.status >= 400 else None)

    async def settled(heading: str, where: str) -> None:
        await expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        await expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_have_count(1)
        if await page.get_by_test_id("stException").count():
            text = (await page.get_by_test_id("stException").first.inner_text())[:300]
            errors.append(f"{tag}: exception on {where}: {text}")

    steps, link, tour = 0, i % len(LINKS), i % len(TOUR)
    timeout_s = timeout_ms / 1000
    try:
        while steps < max_steps and time.monotonic() < deadline:
            kind = "open" if steps % 5 == 0 else ("rerun" if steps % 5 in (1, 3) else "page")
            try:
                if kind == "open":  # a shared link: a page load, a new Streamlit session
                    path, query, heading = LINKS[link % len(LINKS)]
                    link += 1
                    where = f"/{path}?{query[:40]}"
                    since = time.monotonic()
                    leaving[0] = True
                    try:
                        await page.goto(f"{base}/{path}?{query}", wait_until="commit")
                    finally:
                        leaving[0] = False
                    out["open"].append(await wire.answered(since, timeout_s, first_request=False))
                    await settled(heading, where)
                elif kind == "rerun":  # a sidebar widget: the engine radio, vllm <-> sglang (a click commits at
                    # once; TP's box is too narrow in the sidebar for +/- buttons, and typed text commits on Enter
                    # only once React has registered it, which a CPU-starved renderer may not have done yet)
                    where = f"{page.url[len(base):][:50]} (engine change)"
                    radio = page.get_by_test_id("stSidebar").get_by_test_id("stRadio")
                    engine = "sglang" if "e=sglang" not in page.url else "vllm"
                    since = time.monotonic()
                    await radio.locator("label").filter(has_text=engine).click()
                    out["rerun"].append(await wire.answered(since, timeout_s))
                    if engine == "sglang":
                        await expect(page).to_have_url(re.compile(r"[?&]e=sglang(&|$)"))
                    heading = await page.get_by_role("heading", level=1).first.inner_text()
                    await settled(heading.strip(), where)
                else:  # another page, through the sidebar (the plan travels in the link)
                    target = TOUR[tour % len(TOUR)]
                    tour += 1
                    where = f"{page.url[len(base):][:50]} -> {target}"
                    since = time.monotonic()
                    await page.get_by_test_id("stSidebar").get_by_role("link", name=target, exact=True).click()
                    out["page"].append(await wire.answered(since, timeout_s))
                    await settled(HEADINGS.get(target, target), where)
            except Exception as exc:  # a timeout or a failed expectation: an error of the run, not a crash
                errors.append(f"{tag}: {where} ({kind}): {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                with contextlib.suppress(Exception):
                    if SHOTS:
                        await page.screenshot(path=f"{SHOTS}/{tag.replace(' ', '-')}-{steps}.png")
                    await page.goto("about:blank")
                steps = (steps // 5 + 1) * 5 - 1  # start over from the next shared link
            steps += 1
    finally:
        out["steps"] += steps
        await page.close()


class ProtocolUser:
    """One Streamlit session over a websocket: sends reruns as a browser tab would, reads the deltas."""

    def __init__(self, base: str, tag: str):
        self.url = base.replace("http://", "ws://") + "/_stcore/stream"
        self.tag = tag
        self.ws = None
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.page_hash = ""
        self.query = ""

    async def open(self, path: str, query: str, timeout_s: float) -> dict:
        import websockets

        await self.close()
        start = time.monotonic()
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout_s)
        self._sock = self.ws.transport.get_extra_info("socket")
        if self._sock is not None:  # as browsers do: no Nagle delay on small frames
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._quickack()
        self.query = query
        return await self._rerun(start, timeout_s, page_name=path)

    def _quickack(self) -> None:
        """ACK at once (Linux delays ACKs up to 40 ms, and the server's next small frame waits for the ACK:
        a client artifact of ~40 ms per rerun that a browser does not show). Linux clears it after use."""
        if getattr(self, "_sock", None) is not None and hasattr(socket, "TCP_QUICKACK"):
            with contextlib.suppress(OSError):
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)

    async def widget(self, widget_id: str, value: int, timeout_s: float) -> dict:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        return await self._rerun(time.monotonic(), timeout_s, page_hash=self.page_hash,
                                 widgets=[WidgetState(id=widget_id, int_value=value)])

    async def page(self, path: str, timeout_s: float) -> dict:
        return await self._rerun(time.monotonic(), timeout_s, page_hash=self.pages[path])

    async def _rerun(self, start: float, timeout_s: float, page_name: str = "", page_hash: str = "",
                     widgets=()) -> dict:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.query_string, state.page_name, state.page_script_hash = self.query, page_name, page_hash
        state.widget_states.widgets.extend(widgets)
        await self.ws.send(msg.SerializeToString())
        seen: dict = {"elements": [], "blocks": 0, "msgs": []}  # msgs: every ForwardMsg of the run, in order
        async with asyncio.timeout(timeout_s):
            while True:
                fm = ForwardMsg.FromString(await self.ws.recv())
                self._quickack()
                kind = fm.WhichOneof("type")
                seen["msgs"].append(fm)
                if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                    element = fm.delta.new_element
                    seen["elements"].append((element.WhichOneof("type"), element))
                elif kind == "delta" and fm.delta.WhichOneof("type") == "add_block":  # a container, row, expander
                    seen["blocks"] += 1
                elif kind == "navigation":
                    self.pages = {p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages}
                    self.page_hash = fm.navigation.page_script_hash
                elif kind == "page_info_changed":
                    self.query = fm.page_info_changed.query_string
                elif kind == "script_finished":
                    seen["seconds"] = time.monotonic() - start
                    seen["status"] = fm.script_finished
                    return seen

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
            self.ws = None


def _problems(seen: dict, query: str) -> list[str]:
    """What is wrong with one run: an exception, a bad status, Budget numbers that are not this plan's."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = [f"exception: {el.exception.type}: {el.exception.message[:200]}"
           for kind, el in seen["elements"] if kind == "exception"]
    if seen["status"] != ForwardMsg.FINISHED_SUCCESSFULLY:
        out.append(f"script finished with status {seen['status']}")
    metrics = {el.metric.label: el.metric.body for kind, el in seen["elements"] if kind == "metric"}
    titles = [el.heading.body for kind, el in seen["elements"] if kind == "heading" and el.heading.tag == "h1"]
    if titles[:1] == ["Budget"] and "KV blocks" in metrics:  # (the Import page plans the imported flags instead)
        want = _expected_blocks(query)
        if want is not None and metrics["KV blocks"] != want:
            out.append(f"KV blocks {metrics['KV blocks']} but this session's plan ({query[:60]}) has {want}")
    return out


def _expected_blocks(query: str) -> str | None:
    from urllib.parse import parse_qs

    from kvplan.errors import KvplanError
    from kvplan.gpus import get_gpu
    from kvplan.plan import plan
    from kvplan.web import cached
    from kvplan.web.state import decode, model_spec

    state, _ = decode({k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()})
    try:
        p = plan(model_spec(state), get_gpu(state.gpu), cached.engine_config(state), cached.layout(state),
                 state.concurrency)
    except KvplanError:
        return None
    from kvplan.web.views import NO_FIGURE, no_pool_reason

    return NO_FIGURE if no_pool_reason(p) else f"{p.num_blocks:,}"  # the page's own rule: no pool sized, no figure


async def _protocol_session(i: int, base: str, deadline: float, max_steps: int, out: dict, timeout_s: float):
    tag = f"user {i}"
    user = ProtocolUser(base, tag)
    steps, link, tour, tp_id, tp = 0, i % len(LINKS), i % len(TOUR), None, 1
    try:
        while steps < max_steps and time.monotonic() < deadline:
            kind = "open" if steps % 5 == 0 else ("rerun" if steps % 5 in (1, 3) else "page")
            where = f"/{user.query[:50]}"
            try:
                if kind == "open":
                    path, query, _ = LINKS[link % len(LINKS)]
                    link += 1
                    where = f"/{path}?{query[:50]}"
                    seen = await user.open(path, query, timeout_s)
                elif kind == "rerun":
                    tp = next(v for v in TP_VALUES[steps % 4:] + TP_VALUES if v != tp)
                    seen = await user.widget(tp_id, tp, timeout_s)
                else:
                    target = TOUR[tour % len(TOUR)]
                    tour += 1
                    where = f"{where} -> {target}"
                    seen = await user.page(target.lower() if target != "Budget" else "", timeout_s)
                out["proto_" + kind].append(seen["seconds"])
                for problem in _problems(seen, user.query):
                    out["errors"].append(f"{tag}: {where} ({kind}): {problem}")
                box = next((el.number_input for k, el in seen["elements"]
                            if k == "number_input" and el.number_input.label == "TP"), None)
                if box is not None:
                    tp_id, tp = box.id, int(box.value if box.HasField("value") else box.default)
            except Exception as exc:  # a timeout, a dropped connection: an error of the run, not a crash
                out["errors"].append(f"{tag}: {where} ({kind}): {type(exc).__name__}: {str(exc)[:200]}")
                steps = (steps // 5 + 1) * 5 - 1  # start over from the next shared link
            steps += 1
    finally:
        out["steps"] += steps
        await user.close()


async def _warm(context, base: str, timeout_ms: float) -> None:
    """One user visits every page once: the server's first imports are not part of the load."""
    page = await context.new_page()
    for path, query, heading in dict.fromkeys(LINKS):
        await page.goto(f"{base}/{path}?{query}")
        await page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=timeout_ms)
        await page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=timeout_ms)
    await page.close()


async def drive(base: str, sessions: int = 20, browsers: int = 3, duration_s: float = 30.0, max_steps: int = 40,
                timeout_ms: float = 30_000, warm: bool = True) -> dict:
    """Run the load against ``base``; returns counts, errors and latency statistics (ms)."""
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=timeout_ms)
    kinds = ("open", "rerun", "page")
    out: dict = {**{k: [] for k in kinds}, **{f"proto_{k}": [] for k in kinds}, "errors": [], "known": [],
                 "steps": 0}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROME, headless=True, args=CHROME_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            if warm:
                await _warm(context, base, timeout_ms)
            start = time.monotonic()
            deadline = start + duration_s
            await asyncio.gather(
                *(_protocol_session(i, base, deadline, max_steps, out, timeout_ms / 1000) for i in range(sessions)),
                *(_session(sessions + i, context, base, deadline, max_steps, out, timeout_ms) for i in range(browsers)))
            wall = time.monotonic() - start
            await context.close()
        finally:
            await browser.close()
    ms = {k: [1000 * t for t in v] for k, v in out.items() if k in kinds or k.startswith("proto_")}
    return {"sessions": sessions, "browsers": browsers, "steps": out["steps"],
            "timed": sum(len(v) for v in ms.values()), "wall_s": round(wall, 1), "errors": out["errors"],
            "known": sorted(set(out["known"]))[:10], "known_count": len(out["known"]),
            "protocol": {k: stats(ms[f"proto_{k}"]) for k in kinds}
            | {"reruns": stats(ms["proto_rerun"] + ms["proto_page"])},
            "browser": {k: stats(ms[k]) for k in kinds} | {"reruns": stats(ms["rerun"] + ms["page"])}}


def run(base: str, **kwargs) -> dict:
    """``drive`` from synchronous code, in its own thread (safe beside Playwright's sync API)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, drive(base, **kwargs)).result()


def table(result: dict) -> str:
    lines = [f"{result['sessions']} protocol users + {result['browsers']} browser tabs at once: {result['steps']} "
             f"steps ({result['timed']} timed) in {result['wall_s']} s, {len(result['errors'])} errors "
             f"({result['known_count']} known notices)",
             f"{'step (request -> script finished)':<44} {'n':>5} {'median ms':>10} {'p95 ms':>9} {'max ms':>9}"]
    for who in ("protocol", "browser"):
        for key, label in (("open", "open a shared link"), ("rerun", "widget change (rerun)"),
                           ("page", "page change (sidebar link)"), ("reruns", "all reruns (widget + page)")):
            r = result[who][key]
            lines.append(f"{who + ': ' + label:<44} {r['n']:>5} {r['median_ms'] or 0:>10.0f} "
                         f"{r['p95_ms'] or 0:>9.0f} {r['max_ms'] or 0:>9.0f}")
    lines += [f"  error: {e}" for e in result["errors"][:20]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20, help="protocol users (websocket clients)")
    ap.add_argument("--browsers", type=int, default=3, help="browser users (Chromium tabs)")
    ap.add_argument("--duration", type=float, default=45.0, help="seconds of load, then every user stops")
    ap.add_argument("--steps", type=int, default=40, help="at most this many steps per user")
    ap.add_argument("--url", default=None, help="drive a running server instead of starting one")
    ap.add_argument("--cold", action="store_true", help="no warm-up visit: the first imports are part of the load")
    args = ap.parse_args(argv)
    kwargs = dict(sessions=args.sessions, browsers=args.browsers, duration_s=args.duration, max_steps=args.steps,
                  warm=not args.cold)
    if args.url:
        result = run(args.url, **kwargs)
    else:
        with server() as (base, proc, _):
            wait_healthy(base, proc)
            result = run(base, **kwargs)
    print(table(result))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "load.json").write_text(json.dumps({"machine": machine(), **result}, indent=2))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
