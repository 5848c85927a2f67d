"""python3 -m genc.serve model.plan [options]: an OpenAI-compatible HTTP
server over a compiled plan, with continuous batching (genrun serve runs
this). Endpoints and fields: docs/genrun.md; the design: docs/serving.md.

SIGTERM or Ctrl-C drains: new requests get 503 and new connections are
refused, the requests in flight finish (for at most --shutdown-timeout
seconds; then those still open are cut), then the process exits 0.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from typing import List, Optional

DEFAULT_MAX_BODY = 4 << 20
DEFAULT_SHUTDOWN_TIMEOUT = 30.0


def fail(message: str) -> "NoReturn":  # type: ignore[name-defined]
    prog = "genrun serve" if sys.argv and sys.argv[0] == "genrun serve" else "genc.serve"
    sys.stderr.write("%s: error: %s\n" % (prog, message))
    sys.exit(1)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="genrun serve", description="An OpenAI-compatible server over a genc plan.")
    p.add_argument("plan", help="the compiled plan (genc compile)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="where the plan runs")
    p.add_argument("--max-queue", type=int, default=256,
                   help="requests waiting for slots before the server answers 429 (default 256)")
    p.add_argument("--step-tokens", type=int, default=256,
                   help="tokens one step runs: every running request's next token, then prompt pieces (default 256)")
    p.add_argument("--api-key", default=os.environ.get("GENC_API_KEY"),
                   help="require 'Authorization: Bearer KEY' (default: $GENC_API_KEY, else none)")
    p.add_argument("--served-model-name", default=None, help="the model's name in the API (default: the plan's file name)")
    p.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY,
                   help="largest request body (default %d)" % DEFAULT_MAX_BODY)
    p.add_argument("--max-connections", type=int, default=None, metavar="N",
                   help="open connections at most; a request on one more gets 503 (default: no limit)")
    p.add_argument("--shutdown-timeout", type=float, default=DEFAULT_SHUTDOWN_TIMEOUT, metavar="S",
                   help="on SIGTERM, seconds the requests in flight get to finish before they are cut "
                        "(default %g)" % DEFAULT_SHUTDOWN_TIMEOUT)
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    a = p.parse_args(argv)
    if not 0 <= a.port <= 65535:
        p.error("--port must be in [0, 65535]")
    if a.max_queue < 1:
        p.error("--max-queue must be at least 1")
    if a.step_tokens < 1:
        p.error("--step-tokens must be at least 1")
    if a.max_body_bytes < 1:
        p.error("--max-body-bytes must be at least 1")
    if a.max_connections is not None and a.max_connections < 1:
        p.error("--max-connections must be at least 1")
    if not (math.isfinite(a.shutdown_timeout) and a.shutdown_timeout >= 0):
        p.error("--shutdown-timeout must be a number of seconds, 0 or more")
    return a


def openai_503(app) -> None:
    """uvicorn answers a request past limit_concurrency with its own app, a
    plain-text 503 it names service_unavailable in each HTTP protocol
    module; `app` takes its place there, so that the answer has OpenAI's
    error body. A uvicorn without that name keeps its plain 503."""
    import importlib
    import pkgutil

    import uvicorn.protocols.http as http
    for m in pkgutil.iter_modules(http.__path__):
        try:
            mod = importlib.import_module(http.__name__ + "." + m.name)
        except ImportError:  # an optional parser (httptools) that is not installed
            continue
        if hasattr(mod, "service_unavailable"):
            mod.service_unavailable = app


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as e:
        fail("the server needs %s (pip install starlette uvicorn; tools/setup.sh installs them)" % e.name)
    from . import _genc
    from ._serve_app import App, Server, overloaded
    from ._serve_engine import Engine

    if not os.path.isfile(a.plan):
        fail("cannot open plan '%s': no such file" % a.plan)
    try:
        engine = Engine(a.plan, a.device, a.max_queue, a.step_tokens)
    except (_genc.Error, RuntimeError) as e:
        fail(str(e))
    name = a.served_model_name or os.path.splitext(os.path.basename(a.plan))[0]
    server = Server(engine, name, a.api_key, a.max_body_bytes)
    app = App(server)

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig, frame):  # SIGTERM / SIGINT: drain, then uvicorn's graceful shutdown
            server.draining = True
            engine.native.drain()
            super().handle_exit(sig, frame)
            # A drain is a clean exit (0): uvicorn would raise the signal
            # again once shut down.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()

    def have(module: str) -> bool:
        try:
            __import__(module)
            return True
        except ImportError:
            return False

    config = uvicorn.Config(app, host=a.host, port=a.port, log_level=a.log_level, access_log=False,
                            loop="uvloop" if have("uvloop") else "asyncio",
                            http="httptools" if have("httptools") else "h11", lifespan="off",
                            timeout_keep_alive=30,
                            # uvicorn counts the connection a request came on
                            # among those open: N of them served, the next 503.
                            limit_concurrency=None if a.max_connections is None else a.max_connections + 1,
                            timeout_graceful_shutdown=a.shutdown_timeout)
    userver = DrainingServer(config)
    if a.max_connections is not None:
        openai_503(overloaded(server, a.max_connections))

    async def run() -> None:
        engine.attach(asyncio.get_running_loop())
        sys.stderr.write("genc.serve: serving '%s' (%s, %d slots) on http://%s:%d\n" % (
            name, engine.native.device, engine.native.slots, a.host, a.port))
        sys.stderr.flush()
        try:
            await userver.serve()
        finally:
            engine.detach()
            server.close()  # no prompt worker may call into the engine once it closes

    try:
        if config.loop == "uvloop":
            import uvloop
            uvloop.run(run())
        else:
            asyncio.run(run())
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
