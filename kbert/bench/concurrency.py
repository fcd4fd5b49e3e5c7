"""Concurrent clients and server-side batching for ``kbert.bench serve --concurrency N``.

* ``Batcher``: what TF Serving's ``--enable_batching`` does, in-process. Requests queue up; one
  worker thread takes the first, adds whatever else is queued (waiting up to ``timeout_s`` for
  more, TF Serving's ``batch_timeout_micros``) up to ``max_batch`` rows (``max_batch_size``),
  runs the model once on the concatenation and hands every request its rows. One worker thread
  (``num_batch_threads: 1``): the model already uses every core through its intra-op threads.
* ``ClosedLoop``: N client threads, each sending its next request as soon as the last one is
  answered. In such a closed loop the request rate is N / mean latency (Little's law), which is
  how the bench reports it.

The same classes serve kbert (in the bench's process) and ONNX Runtime (in its child process), so
both get the same batching. Written here rather than taken from a library: TF Serving's batcher
is C++ inside the model server, and the point is to time the exported SavedModel in Python
without one (the bench's other rows do the same).
"""

from __future__ import annotations

import queue
import threading
import time

from kbert.bench.common import Runner
from kbert.errors import OptionsError


def rows(request) -> int:
    """Rows in a request: a dict of arrays (their first axis) or a list of strings."""
    if isinstance(request, dict):
        return len(next(iter(request.values())))
    return len(request)


def concat_dicts(requests):
    import numpy as np

    return {k: np.concatenate([r[k] for r in requests]) for k in requests[0]}


def concat_lists(requests):
    return [s for r in requests for s in r]


def split_rows(outputs, sizes):
    """Outputs of one batched call (a dict or a list of arrays, rows first) cut into ``sizes``."""
    parts, start = [], 0
    for size in sizes:
        if isinstance(outputs, dict):
            parts.append({k: v[start:start + size] for k, v in outputs.items()})
        else:
            parts.append([v[start:start + size] for v in outputs])
        start += size
    return parts


class _Slot:
    __slots__ = ("request", "done", "result", "error")

    def __init__(self, request):
        self.request, self.done, self.result, self.error = request, threading.Event(), None, None


class Batcher:
    """``batcher(request)`` -> that request's rows of ``fn(combine(requests queued with it))``."""

    def __init__(self, fn, combine, split, max_batch=32, timeout_s=0.0):
        if max_batch < 1 or timeout_s < 0:
            raise OptionsError(f"Batcher: max_batch must be >= 1 and timeout_s >= 0, got {max_batch}, {timeout_s}")
        self.fn, self.combine, self.split = fn, combine, split
        self.max_batch, self.timeout_s = max_batch, timeout_s
        self.batch_sizes = []  # rows of every batch run (the bench reports their mean)
        self._queue = queue.Queue()
        self._worker = threading.Thread(target=self._loop, name="kbert-batcher", daemon=True)
        self._worker.start()

    def __call__(self, request):
        slot = _Slot(request)
        self._queue.put(slot)
        slot.done.wait()
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _collect(self):
        group = [self._queue.get()]
        size = rows(group[0].request)
        deadline = time.perf_counter() + self.timeout_s
        while size < self.max_batch:
            try:
                wait = deadline - time.perf_counter()
                slot = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            group.append(slot)
            size += rows(slot.request)
        return group, size

    def _loop(self):
        while True:
            group, size = self._collect()
            self.batch_sizes.append(size)
            try:
                sizes = [rows(s.request) for s in group]
                parts = self.split(self.fn(self.combine([s.request for s in group])), sizes)
                for slot, part in zip(group, parts):
                    slot.result = part
            except Exception as e:  # noqa: BLE001 - handed to every waiting client
                for slot in group:
                    slot.error = e
            for slot in group:
                slot.done.set()


class ClosedLoop(Runner):
    """``clients`` threads sending ``requests`` (cycled) through ``batcher``; ``run(n)`` -> the n
    latencies in seconds. Calling it sends one request (warm-up)."""

    def __init__(self, batcher, requests, clients, name="?", group="peer", items=1, unit="request"):
        if clients < 1:
            raise OptionsError(f"ClosedLoop: clients must be >= 1, got {clients}", option="clients", value=clients)
        self.batcher, self.requests, self.clients = batcher, requests, clients
        self.concurrency = clients
        self.name, self.group, self.items, self.unit = name, group, items, unit
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self):
        return self.batcher(self._take())

    def _take(self):
        with self._lock:
            request = self.requests[self._next % len(self.requests)]
            self._next += 1
        return request

    def run_many(self, n):
        latencies, left, lock = [], [n], threading.Lock()
        errors = []

        def client():
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                request = self._take()
                start = time.perf_counter()
                try:
                    self.batcher(request)
                except Exception as e:  # noqa: BLE001 - re-raised below, in the caller's thread
                    errors.append(e)
                    return
                elapsed = time.perf_counter() - start
                with lock:
                    latencies.append(elapsed)

        threads = [threading.Thread(target=client) for _ in range(self.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return latencies

    run = run_many
