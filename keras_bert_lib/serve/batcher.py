"""Requests that arrive together run as one batch: TF Serving's `max_batch_size` and
`batch_timeout_micros`, on asyncio."""

import asyncio
import collections


class Batcher:
    """Runs the requests that arrive together as one model call, in a worker thread.

    `await batcher(rows)` queues one request's rows and returns `run`'s results for them. The
    first request that finds the model idle waits at most `batch_timeout_micros` for others; the
    batch closes when it holds `max_batch_size` rows or the time is up. While a batch runs, new
    requests queue for the next one, so under load batches fill without waiting. A request
    larger than `max_batch_size` is split over consecutive batches (TF Serving's large-batch
    splitting). A caller that goes away before its batch runs (a client that disconnected) is
    dropped from it; one whose batch has started gets nothing, and the others their rows.

    `run(requests)` takes a list of requests (each a list of rows, together at most
    `max_batch_size` rows) and returns one list of results per request. If it raises, every
    request of that batch gets the error. `max_batch_size=1` turns batching off: each row runs
    alone, in arrival order.

    Example:
        ```python
        import asyncio
        from keras_bert_lib.serve.batcher import Batcher
        batcher = Batcher(lambda requests: [[len(row) for row in rows] for rows in requests], max_batch_size=8)
        asyncio.run(batcher(["a", "bb"]))   # [1, 2]
        ```
    """

    def __init__(self, run, max_batch_size=32, batch_timeout_micros=2000, on_batch=None):
        if max_batch_size < 1 or batch_timeout_micros < 0:
            raise ValueError(f"max_batch_size={max_batch_size}, batch_timeout_micros={batch_timeout_micros}: "
                             "the size must be 1 or more and the timeout 0 or more.")
        self.run, self.max_batch_size, self.timeout = run, max_batch_size, batch_timeout_micros / 1e6
        self.on_batch = on_batch  # called with the number of rows of each batch (a metric)
        self._queue = collections.deque()  # (rows, future) chunks of at most max_batch_size rows
        self._arrived = None
        self._worker = None

    async def __call__(self, rows):
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done():
            self._arrived = asyncio.Event()
            self._worker = loop.create_task(self._work())
        chunks = [rows[i:i + self.max_batch_size] for i in range(0, len(rows), self.max_batch_size)]
        futures = [loop.create_future() for _ in chunks]
        self._queue.extend(zip(chunks, futures))
        self._arrived.set()
        try:
            results = await asyncio.gather(*futures)
        except asyncio.CancelledError:
            for future in futures:
                future.cancel()
            raise
        return [result for chunk in results for result in chunk]

    def _pending_rows(self):
        return sum(len(rows) for rows, future in self._queue if not future.done())

    async def _work(self):
        loop = asyncio.get_running_loop()
        while True:
            while not self._queue:
                self._arrived.clear()
                await self._arrived.wait()
            deadline = loop.time() + self.timeout
            while self._pending_rows() < self.max_batch_size and loop.time() < deadline:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), deadline - loop.time())
                except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
                    break
            batch, size = [], 0
            while self._queue and size + len(self._queue[0][0]) <= self.max_batch_size:
                rows, future = self._queue.popleft()
                if not future.done():  # its caller is still there
                    batch.append((rows, future))
                    size += len(rows)
            if not batch:
                continue
            if self.on_batch:
                self.on_batch(size)
            try:
                results = await loop.run_in_executor(None, self.run, [rows for rows, _ in batch])
            except Exception as e:  # the model failed: every caller of the batch hears why
                for _, future in batch:
                    if not future.done():
                        future.set_exception(e)
                continue
            for (_, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)
