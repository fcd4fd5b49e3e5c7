"""kbert.bench.concurrency: the in-process batcher (TF Serving's --enable_batching) and the closed loop
of clients behind ``kbert bench serve --concurrency N``. How a batch is cut and split, when it closes
(rows, timeout), where errors go, that each of many threads gets its own rows back, that requests
queued while a batch runs go together into the next, and that the clients really run at once."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from kbert.bench.concurrency import Batcher, ClosedLoop, concat_dicts, concat_lists, rows, split_rows
from kbert.errors import OptionsError


def test_rows_concat_and_split_are_inverse():
    a = {"ids": np.arange(6).reshape(2, 3), "mask": np.ones((2, 3))}
    b = {"ids": np.arange(3).reshape(1, 3) + 10, "mask": np.zeros((1, 3))}
    assert rows(a) == 2 and rows(b) == 1 and rows(["x", "y", "z"]) == 3
    both = concat_dicts([a, b])
    np.testing.assert_array_equal(both["ids"], np.vstack([a["ids"], b["ids"]]))
    parts = split_rows(both, [2, 1])
    for part, original in zip(parts, (a, b)):
        assert part.keys() == original.keys()
        for k in original:
            np.testing.assert_array_equal(part[k], original[k])
    assert concat_lists([["a", "b"], [], ["c"]]) == ["a", "b", "c"]
    # a list of outputs (ONNX Runtime's) is cut the same way, output by output
    logits, pooled = np.arange(10).reshape(5, 2), np.arange(5)
    parts = split_rows([logits, pooled], [1, 0, 4])
    assert [[len(v) for v in p] for p in parts] == [[1, 1], [0, 0], [4, 4]]
    np.testing.assert_array_equal(parts[2][0], logits[1:])
    np.testing.assert_array_equal(parts[2][1], pooled[1:])


def test_bad_sizes_are_refused():
    with pytest.raises(OptionsError, match=r"Batcher: max_batch must be >= 1 and timeout_s >= 0, got 0, 0.0"):
        Batcher(lambda x: x, concat_lists, split_rows, max_batch=0)
    with pytest.raises(ValueError, match=r"got 4, -1"):
        Batcher(lambda x: x, concat_lists, split_rows, max_batch=4, timeout_s=-1)
    batcher = Batcher(lambda x: x, concat_lists, split_rows)
    with pytest.raises(ValueError, match=r"ClosedLoop: clients must be >= 1, got 0"):
        ClosedLoop(batcher, [["a"]], clients=0)


def _echo():
    """A batcher over lists of strings whose function upper-cases them and logs each batch."""
    batches = []

    def fn(strings):
        batches.append(list(strings))
        return [[s.upper() for s in strings]]

    return batches, fn


def test_without_a_timeout_a_lone_request_is_its_own_batch():
    batches, fn = _echo()
    batcher = Batcher(fn, concat_lists, split_rows, max_batch=8, timeout_s=0.0)
    for text in (["a", "b"], ["c"], ["d"]):  # one after the other: nothing else is queued
        assert batcher(text) == [[t.upper() for t in text]]
    assert batches == [["a", "b"], ["c"], ["d"]] and batcher.batch_sizes == [2, 1, 1]


def _at_once(batcher, requests):
    results = [None] * len(requests)

    def client(i):
        results[i] = batcher(requests[i])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_a_timeout_waits_for_more_rows_and_closes_at_max_batch():
    # TF Serving's batch_timeout_micros: the batch waits for requests up to max_batch rows. With a
    # long timeout three one-row requests sent at once make one batch, closed by max_batch (not by
    # the timeout: the test would take its 30 s).
    batches, fn = _echo()
    batcher = Batcher(fn, concat_lists, split_rows, max_batch=3, timeout_s=30.0)
    start = time.perf_counter()
    results = _at_once(batcher, [["x"], ["y"], ["z"]])
    assert time.perf_counter() - start < 20
    assert batcher.batch_sizes == [3] and sorted(batches[0]) == ["x", "y", "z"]
    assert results == [[["X"]], [["Y"]], [["Z"]]]  # each its own rows back
    # rows, not requests: two requests of two rows pass max_batch 3 together (the last may bring more)
    batcher = Batcher(fn, concat_lists, split_rows, max_batch=3, timeout_s=30.0)
    _at_once(batcher, [["a", "b"], ["c", "d"]])
    assert batcher.batch_sizes == [4]


def test_a_timeout_with_nothing_more_coming_runs_what_it_has():
    batches, fn = _echo()
    batcher = Batcher(fn, concat_lists, split_rows, max_batch=8, timeout_s=0.2)
    start = time.perf_counter()
    assert batcher(["only"]) == [["ONLY"]]
    assert 0.2 <= time.perf_counter() - start < 10 and batcher.batch_sizes == [1]


def test_an_error_reaches_every_client_of_its_batch_and_the_batcher_goes_on():
    def fn(strings):
        if "bad" in strings:
            raise ValueError(f"bad batch of {len(strings)}")
        return [strings]

    batcher = Batcher(fn, concat_lists, split_rows, max_batch=2, timeout_s=30.0)
    errors = []

    def client(request):
        try:
            batcher(request)
        except ValueError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=client, args=(r,)) for r in (["bad"], ["fine"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == ["bad batch of 2", "bad batch of 2"]
    assert batcher(["fine", "too"]) == [["fine", "too"]]


def test_closed_loop_cycles_the_requests():
    seen = []

    def batcher(request):
        seen.append(request)
        return request

    loop = ClosedLoop(batcher, [["a"], ["b"], ["c"]], clients=1, name="kbert", group="kbert", items=2)
    assert [loop() for _ in range(4)] == [["a"], ["b"], ["c"], ["a"]]
    assert (loop.name, loop.group, loop.items, loop.unit, loop.concurrency) == ("kbert", "kbert", 2, "request", 1)
    assert len(loop.run(5)) == 5
    assert seen[4:] == [["b"], ["c"], ["a"], ["b"], ["c"]]  # where the calls left off, in order (one client)


def test_closed_loop_clients_have_requests_in_flight_together():
    # Four clients with a batcher that waits up to 30 s for four rows: the batch closes at once only
    # when the four requests are in flight together (clients one after the other would wait it out).
    batches, fn = _echo()
    batcher = Batcher(fn, concat_lists, split_rows, max_batch=4, timeout_s=30.0)
    loop = ClosedLoop(batcher, [["a"], ["b"], ["c"], ["d"]], clients=4)
    start = time.perf_counter()
    latencies = loop.run_many(8)
    assert time.perf_counter() - start < 20
    assert len(latencies) == 8 and batcher.batch_sizes == [4, 4]
    assert sorted(s for b in batches for s in b) == sorted("abcd" * 2)


def test_closed_loop_latencies_are_each_request_round_trip():
    def slow(strings):
        time.sleep(0.3)
        return [strings]

    loop = ClosedLoop(Batcher(slow, concat_lists, split_rows, max_batch=1), [["a"]], clients=2)
    latencies = loop.run_many(4)
    # one row per batch, one batch at a time: each request waits for its own call and at most for
    # the other client's (2 x 0.3 s), never for the calls before it (the last would be 1.2 s)
    assert len(latencies) == 4 and all(0.3 <= t < 0.9 for t in latencies), latencies


def test_closed_loop_raises_a_clients_error_in_the_caller():
    def fn(strings):
        raise RuntimeError("model failed")

    loop = ClosedLoop(Batcher(fn, concat_lists, split_rows), [["a"]], clients=3)
    with pytest.raises(RuntimeError, match="model failed"):
        loop.run_many(6)


def test_batcher_answers_every_request_with_its_own_rows():
    calls = []

    def fn(batch):
        calls.append(len(batch["x"]))
        return {"y": batch["x"] * 2.0, "s": batch["x"].sum(axis=1)}

    batcher = Batcher(fn, concat_dicts, split_rows, max_batch=8)
    requests = [{"x": np.full((1 + i % 2, 3), float(i))} for i in range(12)]
    results = {}

    def client(i):
        results[i] = batcher(requests[i])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, request in enumerate(requests):
        np.testing.assert_array_equal(results[i]["y"], request["x"] * 2.0)
        np.testing.assert_array_equal(results[i]["s"], request["x"].sum(axis=1))
    assert sum(calls) == sum(len(r["x"]) for r in requests)
    assert max(calls) <= 8 + 1  # a batch closes at max_batch (the last request may bring one row more)
    latencies = ClosedLoop(batcher, requests, clients=4).run(20)
    assert len(latencies) == 20 and all(t > 0 for t in latencies)


def test_batcher_combines_the_requests_queued_while_a_batch_runs():
    """Requests that arrive while the function runs wait, and go together into its next call, up to
    max_batch rows: the point of server-side batching. The first call is held until the others are
    queued, so the grouping does not depend on thread timing."""
    calls, entered, gate = [], threading.Event(), threading.Event()

    def fn(batch):
        calls.append(batch["x"][:, 0].tolist())
        entered.set()
        gate.wait(timeout=60)
        return {"y": batch["x"] * 2.0}

    batcher = Batcher(fn, concat_dicts, split_rows, max_batch=8)
    requests = [{"x": np.full((1, 3), float(i))} for i in range(11)]
    results = {}

    def client(i):
        results[i] = batcher(requests[i])

    threads = [threading.Thread(target=client, args=(0,))]
    threads[0].start()
    assert entered.wait(timeout=60)
    threads += [threading.Thread(target=client, args=(i,)) for i in range(1, 11)]
    for t in threads[1:]:
        t.start()
    deadline = time.monotonic() + 60
    while batcher._queue.qsize() < 10 and time.monotonic() < deadline:  # all ten waiting behind the first
        time.sleep(0.01)
    gate.set()
    for t in threads:
        t.join(timeout=60)
    assert [len(c) for c in calls] == [1, 8, 2], calls
    assert sorted(x for c in calls for x in c) == list(range(11))
    for i, request in enumerate(requests):
        np.testing.assert_array_equal(results[i]["y"], request["x"] * 2.0)
