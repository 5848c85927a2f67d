"""The asyncio side of genc.serve's engine: requests go to the C++ scheduler
(genc._genc._ServeEngine, which steps on its own thread without the GIL),
and its events come back through one eventfd the event loop watches. One
wake-up drains every event queued meanwhile (take_events) and hands each to
its request's asyncio queue, so a step of 64 rows costs one callback, not 64.
"""
from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _genc

TOKEN, SEQUENCE, DONE, ERROR = 0, 1, 2, 3


@dataclass
class Event:
    request: int
    kind: int
    sequence: int
    token: int
    text: str
    last: bool
    stopped: bool
    logprob: float
    top: Optional[List[Tuple[int, float]]]
    ids: Optional[List[int]]
    score: float


class QueueFull(Exception):
    """The scheduler's queue is full (HTTP 429), or it is draining (503)."""

    def __init__(self, message: str, draining: bool):
        super().__init__(message)
        self.draining = draining


@dataclass
class Handle:
    """One submitted request (one prompt): its events go to `queue`, which
    the prompts of one HTTP request share, in order, ending with DONE or ERROR."""
    id: int
    queue: "asyncio.Queue[Event]"
    done: bool = False


def drain_nowait(queue: "asyncio.Queue[Event]") -> List[Event]:
    """Every event already queued (a stream coalesces them when it is behind)."""
    out = []
    while True:
        try:
            out.append(queue.get_nowait())
        except asyncio.QueueEmpty:
            return out


class Engine:
    def __init__(self, plan: str, device: str = "auto", max_queue: int = 256, step_tokens: int = 256) -> None:
        self.native = _genc._ServeEngine(plan, device, max_queue, step_tokens)
        self._ids = itertools.count(1)
        self._handles: Dict[int, Handle] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Starts receiving events on `loop` (call from the loop's thread)."""
        self._loop = loop
        loop.add_reader(self.native.event_fd, self._on_events)

    def detach(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.native.event_fd)
            self._loop = None

    def close(self) -> None:
        self.detach()
        self.native.close()

    def check(self, ids: List[int], cfg: Any, top_logprobs: int) -> None:
        """ValueError naming what generate() would refuse."""
        self.native.check(ids, cfg, top_logprobs)

    def submit(self, ids: List[int], cfg: Any, top_logprobs: int, queue: "asyncio.Queue[Event]") -> Handle:
        h = Handle(next(self._ids), queue)
        why = self.native.submit(h.id, ids, cfg, top_logprobs)
        if why is not None:
            raise QueueFull(why, draining="shutting down" in why)
        self._handles[h.id] = h
        return h

    def cancel(self, h: Handle) -> None:
        """Frees the request's slots at the next step; no event follows."""
        if self._handles.pop(h.id, None) is not None and not h.done:
            self.native.cancel(h.id)

    def _on_events(self) -> None:
        handles = self._handles
        for (rid, kind, seq, token, text, last, stopped, logprob, top, ids, score) in self.native.take_events():
            h = handles.get(rid)
            if h is None:
                continue  # cancelled
            h.queue.put_nowait(Event(rid, kind, seq, token, text, last, stopped, logprob, top, ids, score))
            if kind in (DONE, ERROR):
                h.done = True
                del handles[rid]

    @property
    def in_flight(self) -> int:
        return len(self._handles)
