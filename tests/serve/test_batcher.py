"""The batcher's edges: a full batch, the timeout, a request larger than a batch, a caller who
goes away, a model that fails, batching off."""

import asyncio
import threading
import time

import pytest

from keras_bert_lib.serve.batcher import Batcher


class Recorder:
    """A model that records each call's requests and answers each row with (row, call number)."""

    def __init__(self, seconds=0.0, fail=False):
        self.calls, self.seconds, self.fail = [], seconds, fail
        self.started = threading.Event()

    def __call__(self, requests):
        self.started.set()
        self.calls.append([list(rows) for rows in requests])
        time.sleep(self.seconds)
        if self.fail:
            raise RuntimeError("the model failed")
        return [[(row, len(self.calls)) for row in rows] for rows in requests]


def test_requests_that_arrive_together_run_as_one_call_and_each_caller_gets_its_own_rows():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=8, batch_timeout_micros=200_000)

    async def main():
        return await asyncio.gather(batcher(["a"]), batcher(["b", "c"]), batcher(["d"]))

    got = asyncio.run(main())
    assert got == [[("a", 1)], [("b", 1), ("c", 1)], [("d", 1)]]
    assert model.calls == [[["a"], ["b", "c"], ["d"]]]


def test_a_full_batch_runs_without_waiting_for_the_timeout():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=4, batch_timeout_micros=30_000_000)  # 30 s: never reached

    async def main():
        start = time.perf_counter()
        got = await asyncio.gather(*(batcher([str(i)]) for i in range(4)))
        return got, time.perf_counter() - start

    got, seconds = asyncio.run(main())
    assert [rows[0][0] for rows in got] == ["0", "1", "2", "3"] and seconds < 5
    assert len(model.calls) == 1


def test_a_lone_request_waits_no_longer_than_the_timeout():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=64, batch_timeout_micros=300_000)

    async def main():
        start = time.perf_counter()
        got = await batcher(["alone"])
        return got, time.perf_counter() - start

    got, seconds = asyncio.run(main())
    assert got == [("alone", 1)] and 0.25 < seconds < 3


@pytest.mark.slow
def test_requests_arriving_during_a_call_form_the_next_batch():
    model = Recorder(seconds=0.3)
    batcher = Batcher(model, max_batch_size=8, batch_timeout_micros=0)

    async def main():
        first = asyncio.ensure_future(batcher(["first"]))
        await asyncio.get_running_loop().run_in_executor(None, model.started.wait)
        later = [asyncio.ensure_future(batcher([f"later{i}"])) for i in range(3)]
        return await first, await asyncio.gather(*later)

    first, later = asyncio.run(main())
    assert first == [("first", 1)] and [rows[0][1] for rows in later] == [2, 2, 2]
    assert model.calls == [[["first"]], [["later0"], ["later1"], ["later2"]]]


def test_a_request_larger_than_a_batch_is_split_over_calls_in_order():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=4, batch_timeout_micros=0)
    rows = [str(i) for i in range(10)]
    got = asyncio.run(batcher(rows))
    assert [row for row, _ in got] == rows
    assert [sum(len(r) for r in call) for call in model.calls] == [4, 4, 2]


def test_a_caller_who_goes_away_is_dropped_and_the_others_are_served():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=8, batch_timeout_micros=300_000)

    async def main():
        leaving = asyncio.ensure_future(batcher(["leaves"]))
        staying = asyncio.ensure_future(batcher(["stays"]))
        await asyncio.sleep(0.05)  # both queued, the batch still open
        leaving.cancel()
        got = await staying
        with pytest.raises(asyncio.CancelledError):
            await leaving
        return got

    assert asyncio.run(main()) == [("stays", 1)]
    assert model.calls == [[["stays"]]]


def test_a_failing_model_fails_every_request_of_its_batch_and_the_next_batch_runs():
    model = Recorder(fail=True)
    batcher = Batcher(model, max_batch_size=8, batch_timeout_micros=100_000)

    async def main():
        results = await asyncio.gather(batcher(["a"]), batcher(["b"]), return_exceptions=True)
        model.fail = False
        return results, await batcher(["c"])

    results, after = asyncio.run(main())
    assert all(isinstance(r, RuntimeError) and "the model failed" in str(r) for r in results)
    assert after == [("c", 2)]


def test_a_batch_size_of_one_turns_batching_off():
    model = Recorder()
    sizes = []
    batcher = Batcher(model, max_batch_size=1, batch_timeout_micros=100_000, on_batch=sizes.append)

    async def main():
        return await asyncio.gather(*(batcher([str(i)]) for i in range(5)))

    asyncio.run(main())
    assert sizes == [1] * 5 and len(model.calls) == 5


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="size must be 1 or more"):
        Batcher(lambda r: r, max_batch_size=0)


def test_a_token_budget_closes_a_batch_and_a_row_over_it_runs_alone():
    model = Recorder()
    batcher = Batcher(model, max_batch_size=32, batch_timeout_micros=200_000, max_batch_tokens=100)

    async def main():
        return await asyncio.gather(batcher(["a", "b"], [40, 40]), batcher(["c"], [30]), batcher(["long"], [500]),
                                    batcher(["d"], [10]))

    got = asyncio.run(main())
    assert [[row for row, _ in rows] for rows in got] == [["a", "b"], ["c"], ["long"], ["d"]]
    # 40 + 40 fit in 100, 30 more do not; the 500-token row runs alone; "d" follows
    assert model.calls == [[["a", "b"]], [["c"]], [["long"]], [["d"]]]
    with pytest.raises(ValueError, match="tokens and the batches in flight"):
        Batcher(lambda r: r, max_batch_tokens=0)


def test_with_two_in_flight_the_next_batch_runs_while_one_is_running():
    running, most = [0], [0]
    lock = threading.Lock()

    def model(requests):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return [[row for row in rows] for rows in requests]

    batcher = Batcher(model, max_batch_size=2, batch_timeout_micros=0, in_flight=2)

    async def main():
        return await asyncio.gather(*(batcher([str(i)]) for i in range(6)))

    start = time.perf_counter()
    got = asyncio.run(main())
    assert got == [[str(i)] for i in range(6)] and most[0] == 2
    assert time.perf_counter() - start < 0.3 * 3 * 0.9 + 0.3  # three batches of two, two at a time
