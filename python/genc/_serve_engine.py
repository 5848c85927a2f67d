"""The asyncio side of genc.serve's engine: requests go to the C++ scheduler
(genc._genc._ServeEngine, which steps on its own thread without the GIL),
and its events come back through one eventfd the event loop watches. One
wake-up drains every event queued meanwhile (take_events) and hands each to
its request's mailbox, so a step of 64 rows costs one callback, not 64.
"""
from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import _genc

TOKEN, SEQUENCE, DONE, ERROR, PROMPT = 0, 1, 2, 3, 4


class Event(NamedTuple):
    """One of take_events' tuples, named (a tuple subclass: made whole, not field by field).
    PROMPT (the prompt's log-probabilities, before the first token's event):
    ids, the prompt tokens from position `sequence` on; top, a (logprob,
    rank, [(token, logprob)...]) per id."""
    request: int
    kind: int
    sequence: int
    token: int
    text: str
    last: bool
    stopped: bool
    logprob: float
    top: Optional[List[Any]]
    ids: Optional[List[int]]
    score: float


class QueueFull(Exception):
    """The scheduler's queue is full (HTTP 429), or it is draining (503)."""

    def __init__(self, message: str, draining: bool):
        super().__init__(message)
        self.draining = draining


class Mailbox:
    """The events of one HTTP request's prompts, in order: the engine's
    callback appends, the request's task takes all that piled up at once (a
    stream coalesces them when its client is behind). A list and one future
    a wait, where an asyncio.Queue cost several Python calls an event on
    each side. The client leaving (hang_up) wakes the task too."""
    __slots__ = ("events", "gone", "_waiter")

    def __init__(self) -> None:
        self.events: List[Event] = []
        self.gone = False
        self._waiter: Optional["asyncio.Future[None]"] = None

    def put(self, ev: Event) -> None:
        self.events.append(ev)
        if self._waiter is not None:
            self._wake()

    def hang_up(self) -> None:
        self.gone = True
        self._wake()

    def _wake(self) -> None:
        w, self._waiter = self._waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    async def take(self) -> List[Event]:
        """Every event queued, after waiting for one; [] once the client is gone."""
        while not self.events and not self.gone:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        if self.gone:
            return []
        evs, self.events = self.events, []
        return evs


@dataclass
class Handle:
    """One submitted request (one prompt): its events go to `box`, which
    the prompts of one HTTP request share, in order, ending with DONE or ERROR."""
    id: int
    box: Mailbox
    done: bool = False


class Engine:
    def __init__(self, plan: str, device: str = "auto", max_queue: int = 256, step_tokens: int = 256) -> None:
        self.native = _genc._ServeEngine(plan, device, max_queue, step_tokens)
        self.max_queue = max_queue
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

    def check(self, ids: List[int], cfg: Any, top_logprobs: int, prompt_logprobs: int = -1) -> None:
        """ValueError naming what generate() would refuse."""
        self.native.check(ids, cfg, top_logprobs, prompt_logprobs)

    def submit(self, ids: List[int], cfg: Any, top_logprobs: int, box: Mailbox, prompt_logprobs: int = -1) -> Handle:
        """prompt_logprobs k >= 0: a PROMPT event with each prompt token's
        log-probability and the k likeliest at its position."""
        h = Handle(next(self._ids), box)
        why = self.native.submit(h.id, ids, cfg, top_logprobs, prompt_logprobs)
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
        make = Event._make
        for t in self.native.take_events():
            h = handles.get(t[0])
            if h is None:
                continue  # cancelled
            h.box.put(make(t))
            if t[1] == DONE or t[1] == ERROR:  # the request's last event
                h.done = True
                del handles[t[0]]

    @property
    def in_flight(self) -> int:
        return len(self._handles)
