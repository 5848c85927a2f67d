"""What a request's events become on the way out (genc.serve): the whole
answer of a non-streamed request, or the server-sent events of a streamed
one, in OpenAI's shapes — each choice's text (stop strings cut), its
log-probabilities and the prompt's, its finish reason, the usage.
"""
from __future__ import annotations

import json
import time
import uuid
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from starlette.responses import JSONResponse, Response
from starlette.types import Send

from ._serve_engine import DONE, ERROR, PROMPT, SEQUENCE, TOKEN, Event, Handle, Mailbox
from ._serve_requests import OpenAIError
from ._serve_text import ChoiceText, PromptScores, chat_logprobs, completion_logprobs

if TYPE_CHECKING:
    from ._serve_app import Server


def error_response(e: OpenAIError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status)


class Started:
    """A request whose prompts were queued: what its answer needs."""

    def __init__(self, s: Any, chat: bool, handles: List[Handle], box: Mailbox, prompts: List[Tuple[List[int], str]],
                 echo: bool, want_ids: bool, echo_top: int = -1, vllm_top: int = -1) -> None:
        self.s, self.chat, self.handles, self.box, self.prompts, self.echo = s, chat, handles, box, prompts, echo
        self.want_ids = want_ids  # vLLM's return_token_ids: the generated ids (stop strings not cut)
        # The prompt's log-probabilities: echo with logprobs (OpenAI's
        # completions; -1: not asked), vLLM's prompt_logprobs (-1: not asked).
        self.echo_top, self.vllm_top = echo_top, vllm_top
        self.scores = [PromptScores(ids) for ids, _ in prompts] if max(echo_top, vllm_top) >= 0 else []
        self.rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.prompt_tokens = sum(len(ids) for ids, _ in prompts)


async def collect(box: Mailbox, handles: List[Handle]) -> Optional[List[Event]]:
    """Every event of the handles, until each is done; None when the client left."""
    events: List[Event] = []
    open_ = {h.id for h in handles}
    while open_:
        evs = await box.take()
        if box.gone:
            return None
        for ev in evs:
            events.append(ev)
            if ev.kind in (DONE, ERROR):
                open_.discard(ev.request)
    return events


class Choices:
    """The choices of one request as its events arrive: choice index =
    prompt * n + sequence, each with its text (stop strings cut), logprobs,
    finish reason; beam search and best_of rank whole sequences at the end."""

    def __init__(self, s: Any, handles: List[Handle]) -> None:
        self.s = s
        self.index = {h.id: k for k, h in enumerate(handles)}
        self.rows = s.rows
        self.texts: Dict[int, ChoiceText] = {}
        self.logprobs: Dict[int, List[Tuple[int, float, List[Tuple[int, float]]]]] = {}
        self.finish: Dict[int, str] = {}
        self.sequences: Dict[int, List[Tuple[float, int, str, List[int], bool]]] = {}
        self.tokens = 0
        self.error: Optional[str] = None

    def token(self, ev: Event) -> Tuple[int, str]:
        """A token event: its choice and the text that may go out now."""
        c = self.index[ev.request] * self.rows + ev.sequence
        self.tokens += 1
        t = self.texts.get(c)
        if t is None:
            t = self.texts[c] = ChoiceText(self.s.stop, self.s.include_stop)
        if ev.top is not None:
            self.logprobs.setdefault(c, []).append((ev.token, ev.logprob, list(ev.top)))
        piece = t.feed(ev.text, ev.last)
        if ev.last:
            self.finish[c] = "stop" if ev.stopped or t.cut is not None else "length"
        return c, piece

    def sequence(self, ev: Event) -> None:
        self.sequences.setdefault(self.index[ev.request], []).append(
            (ev.score, ev.sequence, ev.text, list(ev.ids or []), ev.stopped))

    def final(self) -> List[Tuple[int, str, str, List[int]]]:
        """(choice, text, finish reason, ids) per returned choice, in order."""
        out = []
        n = self.s.n
        for p, seqs in sorted(self.sequences.items()):
            if self.s.beams:
                seqs = sorted(seqs, key=lambda x: x[1])[:n]  # rank order, best first
            elif self.rows > n:
                seqs = sorted(seqs, key=lambda x: -x[0])[:n]  # best_of: the n likeliest
            else:
                seqs = sorted(seqs, key=lambda x: x[1])
            for j, (score, seq, text, ids, stopped) in enumerate(seqs):
                cut = ChoiceText(self.s.stop, self.s.include_stop)
                body = cut.final(text)
                reason = "stop" if stopped or len(body) < len(text) else "length"
                out.append((p * n + j, body, reason, ids, p * self.rows + seq))
        return out


def usage(prompt_tokens: int, completion_tokens: int) -> Dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def answer(srv: Server, r: Started, events: List[Event]) -> Response:
    """A whole (non-streamed) answer from all of a request's events."""
    s, chat = r.s, r.chat
    choices = Choices(s, r.handles)
    for ev in events:
        if ev.kind == ERROR:
            e = OpenAIError(500, "generation failed: " + ev.text, type_="server_error")
            return error_response(e)
        if ev.kind == TOKEN:
            choices.token(ev)
        elif ev.kind == SEQUENCE:
            choices.sequence(ev)
        elif ev.kind == PROMPT:
            r.scores[choices.index[ev.request]].add(ev.sequence, list(ev.top or ()))
    out = []
    completion_tokens = 0
    for c, text, reason, ids, raw in choices.final():
        if s.prompt_only:  # max_tokens 0: the token generated to run the prompt is dropped
            text, reason, ids, raw = "", "length", [], -1
        completion_tokens += len(ids)
        lp = choices.logprobs.get(raw)
        if chat:
            item = {"index": c, "message": {"role": "assistant", "content": text}, "finish_reason": reason,
                    "logprobs": chat_logprobs(srv.engine, lp) if lp is not None else None}
        else:
            prefix = r.prompts[c // s.n][1] if r.echo else ""
            if r.echo_top >= 0:  # the prompt's tokens first, the first one with nothing to predict it
                lp = r.scores[c // s.n].echo_items(r.echo_top) + (lp or [])
            item = {"index": c, "text": prefix + text, "finish_reason": reason,
                    "logprobs": completion_logprobs(srv.engine, lp, 0 if r.echo_top >= 0 else len(prefix))
                    if lp is not None else None}
            if r.vllm_top >= 0:
                item["prompt_logprobs"] = r.scores[c // s.n].vllm(srv.engine, r.vllm_top)
        if r.want_ids:
            item["token_ids"] = ids
        out.append(item)
    body = {"id": r.rid, "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": srv.model, "choices": out,
            "usage": usage(r.prompt_tokens, completion_tokens)}
    if chat and r.vllm_top >= 0:  # vLLM's place for a chat's (one prompt)
        body["prompt_logprobs"] = r.scores[0].vllm(srv.engine, r.vllm_top)
    return JSONResponse(body)


STREAM_START = {"type": "http.response.start", "status": 200,
                "headers": [(b"cache-control", b"no-cache"), (b"content-type", b"text/event-stream; charset=utf-8")]}


async def stream(srv: Server, send: Send, r: Started) -> None:
    """OpenAI's server-sent events: a chunk per choice with its new text,
    several tokens' text in one chunk only when the client is behind (the
    events piled up while it read), a last chunk per choice with its
    finish reason, the usage chunk when asked, then [DONE]. Each wake-up's
    chunks go out in one send; the last one's with the end of the body."""
    s, chat, prompts = r.s, r.chat, r.prompts
    obj = "chat.completion.chunk" if chat else "text_completion"
    head = ('data: {"id":%s,"object":"%s","created":%d,"model":%s,"choices":[' % (
        json.dumps(r.rid), obj, int(time.time()), json.dumps(srv.model))).encode()
    field = b'"delta":' if chat else b'"text":'

    def chunk(c: int, text: str, reason: Optional[str], lp: Any = None, ids: Optional[List[int]] = None) -> bytes:
        # Bytes formatted in place; a string as json.dumps(text, ensure_ascii=False)
        # writes it (encode_basestring is its C function, without an encoder built a call).
        if chat:
            content = b'{"content":%s}' % encode_basestring(text).encode() if text or reason is None else b"{}"
        else:
            content = encode_basestring(text).encode()
        return b'%s{"index":%d,%s%s,"logprobs":%s,"finish_reason":%s%s}]}\n\n' % (
            head, c, field, content, b"null" if lp is None else json.dumps(lp, ensure_ascii=False).encode(),
            b"null" if reason is None else b'"%s"' % reason.encode(),
            b"" if ids is None else b',"token_ids":%a' % (ids,))  # a list of ints' repr is its JSON

    choices = Choices(s, r.handles)
    want_ids = r.want_ids
    open_ = {h.id for h in r.handles}
    offsets: Dict[int, int] = {}
    out: List[bytes] = []
    await send(STREAM_START)

    def echo(p: int) -> None:
        """Each of prompt p's choices starts with the prompt's text (and,
        with logprobs, its tokens': sent once they are all known)."""
        for j in range(s.n):
            c = p * s.n + j
            lp = None
            if r.echo_top >= 0:
                lp = completion_logprobs(srv.engine, r.scores[p].echo_items(r.echo_top), 0)
            out.append(chunk(c, prompts[p][1], None, lp))
            offsets[c] = len(prompts[p][1]) if lp is None else sum(len(t) for t in lp["tokens"])

    if chat or r.echo:
        for p in range(len(prompts)):
            if chat:
                for j in range(s.n):
                    out.append(b'%s{"index":%d,"delta":{"role":"assistant","content":""},"logprobs":null,'
                               b'"finish_reason":null}]}\n\n' % (head, p * s.n + j))
            elif r.echo_top < 0 or r.scores[p].complete:
                echo(p)
    while open_:
        if out:
            await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
            out = []
        evs = await r.box.take()
        if r.box.gone:
            return
        # Each choice's new tokens: their text pieces, ids (return_token_ids)
        # and logprobs; whether its last token came.
        pieces: Dict[int, List[str]] = {}
        idss: Dict[int, List[int]] = {}
        lps: Dict[int, List[Any]] = {}
        ends: List[int] = []
        errors = []
        for ev in evs:
            kind = ev.kind
            if kind == TOKEN and s.prompt_only:  # max_tokens 0: the prompt alone, then its end
                c, _ = choices.token(ev)
                if ev.last:
                    out.append(chunk(c, "", "length"))
            elif kind == TOKEN:
                c, piece = choices.token(ev)
                pieces.setdefault(c, []).append(piece)
                if want_ids:
                    idss.setdefault(c, []).append(ev.token)
                if ev.top is not None:
                    lps.setdefault(c, []).append((ev.token, ev.logprob, list(ev.top)))
                if ev.last:
                    ends.append(c)
            elif kind == SEQUENCE:
                choices.sequence(ev)
            elif kind == PROMPT:  # before the prompt's first token
                p = choices.index[ev.request]
                r.scores[p].add(ev.sequence, list(ev.top or ()))
                if r.scores[p].complete:
                    echo(p)
            else:  # DONE or ERROR: the prompt's last event
                if kind == ERROR:
                    errors.append(ev.text)
                open_.discard(ev.request)
        for c, ps in pieces.items():
            text = "".join(ps)
            lp = None
            if lps and c in lps:
                if chat:
                    lp = chat_logprobs(srv.engine, lps[c])
                else:
                    lp = completion_logprobs(srv.engine, lps[c], offsets.get(c, 0))
                    offsets[c] = offsets.get(c, 0) + sum(len(t) for t in lp["tokens"])
            ids = idss.get(c)
            if text or lp is not None or ids:
                out.append(chunk(c, text, None, lp, ids))
            if ends and c in ends:
                out.append(chunk(c, "", choices.finish.get(c, "length")))
        if s.beams and not open_:  # beam search: each returned hypothesis once it is final
            for c, text, reason, ids, _ in choices.final():
                choices.tokens += len(ids)
                out.append(chunk(c, text, None))
                out.append(chunk(c, "", reason))
        for message in errors:
            out.append(b"data: %s\n\n" % json.dumps({"error": {
                "message": "generation failed: " + message, "type": "server_error", "param": None,
                "code": None}}).encode())
    if s.include_usage:
        generated = 0 if s.prompt_only else choices.tokens
        out.append(head + b'],"usage":%s}\n\n' % json.dumps(usage(r.prompt_tokens, generated)).encode())
    out.append(b"data: [DONE]\n\n")
    await send({"type": "http.response.body", "body": b"".join(out), "more_body": False})
