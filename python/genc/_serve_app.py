"""genc.serve's HTTP layer: an ASGI app with OpenAI's endpoints over the
engine (genc._serve_engine). Every bad request gets a 4xx with OpenAI's
error body and the server keeps serving; the scheduler's queue bounds what
waits (429 past it). The two generation endpoints are plain ASGI callables
on the server's own send; the rest is Starlette (App says why). A prompt's
tokenizing and chat template run on the server's prompt workers, off the
event loop: a prompt of megabytes does not hold up the other streams.
What a request's events become (the answer, the stream): genc._serve_answer.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from . import _chat
from ._serve_answer import Started, answer, collect, error_response, stream
from ._serve_engine import Engine, Handle, Mailbox, QueueFull
from ._serve_metrics import prometheus_text
from ._serve_requests import CHAT, COMPLETION, OpenAIError, bad, check_fields, get, native_config, sampling

T = TypeVar("T")

# Threads that turn a request's prompts into ids (the chat template, the
# tokenizer, which runs without the GIL): a few, so that large prompts
# tokenize side by side without taking every core from the engine.
PROMPT_WORKERS = max(1, min(4, os.cpu_count() or 1))


class Server:
    """The app's state: the engine, the model's name, the limits, the
    prompt workers (close() stops them; before the engine closes)."""

    def __init__(self, engine: Engine, model: str, api_key: Optional[str], max_body: int) -> None:
        self.engine = engine
        self.model = model
        self.api_key = api_key
        self.max_body = max_body
        self.created = int(time.time())
        self.draining = False
        self.http: Dict[Tuple[str, int], int] = {}  # (endpoint, status) -> count
        native = engine.native
        self.defaults: Dict[str, Any] = dict(native.generation_defaults or {})
        self.templates = dict(native.chat_templates)
        self.special_tokens = dict(native.special_tokens)
        # A prompt past the plan's positions fails as it is tokenized, before
        # its ids become a Python list (an encoder-decoder's source: the check).
        self.prompt_limit = native.max_length if native.max_length > 0 and not native.is_encoder_decoder else -1
        self.workers = ThreadPoolExecutor(PROMPT_WORKERS, thread_name_prefix="genc-serve-prompt")

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) on a prompt worker; the event loop serves the others meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self.workers, fn, *args)

    def close(self) -> None:
        """Stops the prompt workers: those queued are dropped, a running one finishes."""
        self.workers.shutdown(wait=True, cancel_futures=True)

    def count(self, endpoint: str, status: int) -> None:
        self.http[(endpoint, status)] = self.http.get((endpoint, status), 0) + 1


def authorized(srv: Server, request: Request) -> bool:
    if srv.api_key is None:
        return True
    got = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
    return hmac.compare_digest(got, ("Bearer " + srv.api_key).encode("utf-8", "surrogateescape"))


async def read_json(srv: Server, request: Request) -> Dict[str, Any]:
    """The body as a JSON object: limited in size, UTF-8, an object."""
    if not authorized(srv, request):
        raise OpenAIError(401, "missing or wrong API key (Authorization: Bearer KEY)"
                          if request.headers.get("authorization") else "missing API key (Authorization: Bearer KEY)",
                          code="invalid_api_key")
    if srv.draining:
        raise OpenAIError(503, "the server is shutting down", type_="server_error")
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > srv.max_body:
        raise OpenAIError(413, "the request body is over the limit of %d bytes" % srv.max_body)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > srv.max_body:
            raise OpenAIError(413, "the request body is over the limit of %d bytes" % srv.max_body)
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad("the request body is not valid UTF-8 (byte %d)" % e.start) from None
    try:
        body = json.loads(text)
    except ValueError as e:
        raise bad("the request body is not valid JSON: %s" % e) from None
    except RecursionError:
        raise bad("the request body is nested too deeply") from None
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("'model' must be a string", "model")
    if model is not None and model != srv.model:
        raise OpenAIError(404, "the model '%s' does not exist; this server serves '%s'" % (model, srv.model),
                          "model", code="model_not_found")
    return body


def too_long(srv: Server, n: int, param: str) -> OpenAIError:
    return bad("%s: the prompt (%d tokens) is longer than the plan's maximum length %d"
               % (param, n, srv.prompt_limit), param)


def encode(srv: Server, text: str, param: str) -> List[int]:
    """On a prompt worker (completion_prompts)."""
    try:
        return list(srv.engine.native.encode(text.encode("utf-8", "surrogatepass"), srv.prompt_limit))
    except ValueError as e:
        raise bad("%s: %s" % (param, e), param) from None


def completion_prompts(srv: Server, body: Dict[str, Any]) -> List[Tuple[List[int], str]]:
    """(ids, text) per prompt: a string, token ids, or an array of either.
    Runs on a prompt worker (Server.off_loop)."""
    p = body.get("prompt")
    if p is None:
        raise bad("'prompt' is required", "prompt")
    # A non-empty array of JSON integers (a bool is not one), checked in C:
    # a Python call a token cost more than the rest of the request's checks.
    is_ids = lambda x: isinstance(x, list) and len(x) > 0 and set(map(type, x)) == {int}
    if isinstance(p, str):
        items: List[Any] = [p]
    elif is_ids(p):
        items = [p]
    elif isinstance(p, list) and p and all(isinstance(x, str) or is_ids(x) for x in p):
        items = p
    else:
        raise bad("'prompt' must be a string, an array of token ids, or a non-empty array of either", "prompt")
    vocab = srv.engine.native.vocab_size
    out = []
    for x in items:
        if isinstance(x, str):
            out.append((encode(srv, x, "prompt"), x))
        else:
            if 0 <= srv.prompt_limit < len(x):
                raise too_long(srv, len(x), "prompt")
            if min(x) < 0 or max(x) >= vocab:
                raise bad("'prompt' holds a token id outside the vocabulary [0, %d)" % vocab, "prompt")
            out.append((list(x), srv.engine.native.decode(list(x), False) if srv.engine.native.has_tokenizer else ""))
    return out


def chat_prompt(srv: Server, body: Dict[str, Any]) -> List[int]:
    """The messages through the template, tokenized; on a prompt worker."""
    messages = get(body, "messages", "list")
    if not messages:
        raise bad("'messages' must be a non-empty array", "messages")
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad("each message must be an object with a string 'role'", "messages")
        c = m.get("content")
        if c is not None and not isinstance(c, (str, list)):
            raise bad("a message's 'content' must be a string or an array of content parts", "messages")
    if body.get("tools") or body.get("functions"):
        raise bad("tools and functions are not supported", "tools")
    fmt = get(body, "response_format", "dict")
    if fmt is not None and fmt.get("type") != "text":
        raise bad("only response_format {\"type\": \"text\"} is supported", "response_format")
    if not srv.engine.native.has_tokenizer:
        raise bad("this model's plan carries no tokenizer: chat needs one; use the completions endpoint with "
                  "token ids", "messages")
    try:
        template = _chat.select_template(srv.templates)
    except ValueError as e:
        raise bad(str(e), "messages") from None
    kwargs = get(body, "chat_template_kwargs", "dict", {})
    try:
        text = _chat.render(template, messages, srv.special_tokens,
                            add_generation_prompt=get(body, "add_generation_prompt", "bool", True), **kwargs)
    except (ValueError, TypeError) as e:
        raise bad("the chat template refused the messages: %s" % e, "messages") from None
    try:  # as apply_chat_template(tokenize=True): no special tokens added
        return list(srv.engine.native.encode_plain(text.encode("utf-8", "surrogatepass"), srv.prompt_limit))
    except ValueError as e:
        raise bad("messages: %s" % e, "messages") from None


def submit_all(srv: Server, s: Any, prompts: List[List[int]], top: int,
               prompt_top: int = -1) -> Tuple[List[Handle], Mailbox]:
    """Checks every prompt, then queues them all (none when one fails)."""
    native = srv.engine.native
    if len(prompts) > srv.engine.max_queue:  # it could never be queued whole: no retry helps
        raise bad("%d prompts in one request, more than the server queues (--max-queue %d)"
                  % (len(prompts), srv.engine.max_queue), "prompt")
    cfgs = []
    for ids in prompts:
        cfg = native_config(s, native, len(ids), native.max_length - len(ids))
        try:
            srv.engine.check(ids, cfg, top, prompt_top)
        except ValueError as e:
            raise bad(str(e)) from None
        cfgs.append(cfg)
    box = Mailbox()
    handles: List[Handle] = []
    try:
        for ids, cfg in zip(prompts, cfgs):
            handles.append(srv.engine.submit(ids, cfg, top, box, prompt_top))
    except QueueFull as e:
        for h in handles:
            srv.engine.cancel(h)
        if e.draining:
            raise OpenAIError(503, str(e), type_="server_error") from None
        raise OpenAIError(429, str(e), type_="rate_limit_error") from None
    return handles, box


async def watch_disconnect(receive: Receive, box: Mailbox) -> None:
    """One task a request (the body already read): the client hanging up
    wakes the request's task, which then frees its slots."""
    while (await receive())["type"] != "http.disconnect":
        pass
    box.hang_up()


class Generate:
    """POST /v1/completions or /v1/chat/completions as a plain ASGI app:
    its answer goes straight to the server's send, a stream's chunks as
    pre-formatted bytes, one send a wake-up (Starlette's StreamingResponse
    ran an anyio task group a request and two send wrappers a chunk)."""

    def __init__(self, srv: Server, chat: bool) -> None:
        self.srv, self.chat = srv, chat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        srv = self.srv
        started = await handle(srv, self.chat, Request(scope, receive))
        if isinstance(started, Response):  # refused
            await started(scope, receive, send)
            return
        endpoint = "chat" if self.chat else "completions"
        status = 500  # what the metrics count: the answer's final status (499: the client left)
        gone = asyncio.ensure_future(watch_disconnect(receive, started.box))
        try:
            if started.s.stream:
                await stream(srv, send, started)
                status = 499 if started.box.gone else 200
                return
            events = await collect(started.box, started.handles)
        finally:  # a client that goes away frees its slots at the next step
            gone.cancel()
            for h in started.handles:
                srv.engine.cancel(h)
            if started.s.stream:
                srv.count(endpoint, status)
        if events is None:
            status, response = 499, Response(status_code=499)
        else:
            response = answer(srv, started, events)
            status = response.status_code
        srv.count(endpoint, status)
        await response(scope, receive, send)


async def handle(srv: Server, chat: bool, request: Request) -> Union[Response, Started]:
    """The request checked and queued, or the error response that refuses it."""
    endpoint = "chat" if chat else "completions"
    try:
        body = await read_json(srv, request)
        check_fields(body, CHAT if chat else COMPLETION)
        s = sampling(body, chat, srv.defaults)
        if chat:
            prompts = [(await srv.off_loop(chat_prompt, srv, body), "")]
            top = -1
            if get(body, "logprobs", "bool", False):
                top = get(body, "top_logprobs", "int", 0)
                if not 0 <= top <= 20:
                    raise bad("'top_logprobs' must be in [0, 20]", "top_logprobs")
            elif body.get("top_logprobs") is not None:
                raise bad("'top_logprobs' needs 'logprobs' true", "top_logprobs")
            echo = False
            echo_top = -1
        else:
            if body.get("suffix") is not None:
                raise bad("'suffix' is not supported", "suffix")
            prompts = await srv.off_loop(completion_prompts, srv, body)
            top = get(body, "logprobs", "int", -1)
            if not -1 <= top <= 20:
                raise bad("'logprobs' must be in [0, 20]", "logprobs")
            echo = get(body, "echo", "bool", False)
            echo_top = top if echo else -1
        if top >= 0 and s.beams:
            raise bad("logprobs are not available with beam search", "logprobs")
        if s.prompt_only and s.beams:
            raise bad("'max_tokens' 0 (the prompt alone) is not available with beam search", "max_tokens")
        vllm_top = get(body, "prompt_logprobs", "int", -1)
        if not -1 <= vllm_top <= 20:
            raise bad("'prompt_logprobs' must be in [0, 20]", "prompt_logprobs")
        if vllm_top >= 0 and s.stream:
            raise bad("'prompt_logprobs' is not available with streaming", "prompt_logprobs")
        want_ids = get(body, "return_token_ids", "bool", False)
        handles, box = submit_all(srv, s, [ids for ids, _ in prompts], top, max(echo_top, vllm_top))
    except OpenAIError as e:
        srv.count(endpoint, e.status)
        return error_response(e)
    except Exception as e:  # a fault of the server's, answered in OpenAI's shape; the server goes on
        traceback.print_exc(file=sys.stderr)
        srv.count(endpoint, 500)
        return error_response(OpenAIError(500, "internal error: %s" % type(e).__name__, type_="server_error"))
    return Started(s, chat, handles, box, prompts, echo, want_ids, echo_top, vllm_top)


def model_card(srv: Server) -> Dict[str, Any]:
    native = srv.engine.native
    return {"id": srv.model, "object": "model", "created": srv.created, "owned_by": "genc",
            "max_model_len": native.max_length, "device": native.device}


async def models(request: Request) -> Response:
    srv: Server = request.app.state.server
    if not authorized(srv, request):
        return error_response(OpenAIError(401, "missing or wrong API key (Authorization: Bearer KEY)",
                                          code="invalid_api_key"))
    return JSONResponse({"object": "list", "data": [model_card(srv)]})


async def model(request: Request) -> Response:
    """GET /v1/models/{id}: the served model's card (client.models.retrieve)."""
    srv: Server = request.app.state.server
    if not authorized(srv, request):
        return error_response(OpenAIError(401, "missing or wrong API key (Authorization: Bearer KEY)",
                                          code="invalid_api_key"))
    name = request.path_params["name"]
    if name != srv.model:
        return error_response(OpenAIError(404, "the model '%s' does not exist; this server serves '%s'"
                                          % (name, srv.model), "model", code="model_not_found"))
    return JSONResponse(model_card(srv))


async def health(request: Request) -> Response:
    srv: Server = request.app.state.server
    if srv.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    return JSONResponse({"status": "ok"})


async def metrics(request: Request) -> Response:
    srv: Server = request.app.state.server
    return PlainTextResponse(prometheus_text(srv.engine.native.metrics(), srv.http, srv.model),
                             media_type="text/plain; version=0.0.4")


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(OpenAIError(404, "no such endpoint: %s %s" % (request.method, request.url.path)))


async def bad_method(request: Request, exc: Exception) -> Response:
    r = error_response(OpenAIError(405, "method %s not allowed on %s" % (request.method, request.url.path)))
    allow = getattr(exc, "headers", None) or {}
    if "Allow" in allow:  # HTTP's rule for a 405; Starlette's routing names the methods
        r.headers["Allow"] = allow["Allow"]
    return r


def endpoint_of(path: str) -> str:
    """The endpoint label of /metrics' HTTP counts for a path."""
    return {"/v1/completions": "completions", "/v1/chat/completions": "chat"}.get(path, "other")


def overloaded(srv: Server, limit: int) -> Callable[[Scope, Receive, Send], Any]:
    """The answer to a request that comes past --max-connections: uvicorn
    calls this app in place of the server's (serve.py puts it where uvicorn
    calls its own plain-text 503), so the client gets OpenAI's error body,
    which the openai client reads, with Retry-After; the count shows in
    /metrics. The connection is closed after it, as uvicorn does."""
    body = json.dumps(OpenAIError(503, "the server is at its limit of %d open connections (--max-connections); "
                                  "retry later" % limit, type_="server_error", code="overloaded").body()).encode()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        srv.count(endpoint_of(scope.get("path", "")), 503)
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                                (b"retry-after", b"1"), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return app


class App:
    """The ASGI app. A POST to a generation endpoint goes straight to its
    Generate, on uvicorn's own send; everything else (and those paths'
    405s and slash redirects, through the same Generate) to Starlette,
    whose error middlewares wrap every send in two more coroutines."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.generate = {"/v1/completions": Generate(server, False), "/v1/chat/completions": Generate(server, True)}
        routes = [Route(path, g, methods=["POST"]) for path, g in self.generate.items()] + [
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{name:path}", model, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ]
        self.starlette = Starlette(routes=routes, exception_handlers={404: not_found, 405: bad_method})
        self.starlette.state.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        g = self.generate.get(scope.get("path")) if scope.get("method") == "POST" else None
        try:
            await (g or self.starlette)(scope, receive, send)
        except asyncio.CancelledError:
            if not self.server.draining:
                raise
            # Still open when --shutdown-timeout ran out (a client that stopped
            # reading): uvicorn cancelled it and says so; it ends here, no traceback.
