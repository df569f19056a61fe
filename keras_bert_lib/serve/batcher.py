"""Requests that arrive together run as one batch: TF Serving's `max_batch_size` and
`batch_timeout_micros`, on asyncio."""

import asyncio
import collections


class Batcher:
    """Runs the requests that arrive together as one model call, in a worker thread.

    `await batcher(rows, tokens)` queues one request's rows (with each row's token count, where the
    batch has a token budget) and returns `run`'s results for them. The first request that finds the
    model idle waits at most `batch_timeout_micros` for others (default 0: none); the batch closes
    when it holds `max_batch_size` rows or `max_batch_tokens` tokens (TEI's `--max-batch-tokens`:
    the sum of its rows' tokens), or the time is up. Up to `in_flight` batches run at once: while
    one runs, the next forms and starts, so under load batches fill without waiting and the cores
    stay busy through what one call leaves idle. A request larger than a batch is split over
    consecutive batches (TF Serving's large-batch splitting); a row over the token budget runs
    alone. A caller that goes away before its batch runs (a client that disconnected) is dropped
    from it; one whose batch has started gets nothing, and the others their rows.

    `run(requests)` takes a list of requests (each a list of rows, together at most
    `max_batch_size` rows) and returns one list of results per request. If it raises, every
    request of that batch gets the error. `max_batch_size=1` turns batching off: each row runs
    alone, in arrival order.

    Example:
        ```python
        import asyncio
        from keras_bert_lib.serve.batcher import Batcher
        batcher = Batcher(lambda requests: [[len(row) for row in rows] for rows in requests], max_batch_size=8)
        assert asyncio.run(batcher(["a", "bb"])) == [1, 2]
        ```
    """

    def __init__(self, run, max_batch_size=32, batch_timeout_micros=0, on_batch=None, max_batch_tokens=None,
                 in_flight=1):
        if max_batch_size < 1 or batch_timeout_micros < 0 or in_flight < 1 or (
                max_batch_tokens is not None and max_batch_tokens < 1):
            raise ValueError(f"max_batch_size={max_batch_size}, batch_timeout_micros={batch_timeout_micros}, "
                             f"max_batch_tokens={max_batch_tokens}, in_flight={in_flight}: the size must be 1 or "
                             "more, as must the tokens and the batches in flight, and the timeout 0 or more.")
        self.run, self.max_batch_size, self.timeout = run, max_batch_size, batch_timeout_micros / 1e6
        self.max_batch_tokens, self.in_flight = max_batch_tokens, in_flight
        self.on_batch = on_batch  # called with the number of rows of each batch (a metric)
        self._queue = collections.deque()  # (rows, tokens, future) chunks of at most one batch
        self._arrived = None
        self._worker = None
        self._slots = None
        self._running = set()  # the batches' tasks, held until they end

    async def __call__(self, rows, tokens=None):
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done():
            self._arrived, self._slots = asyncio.Event(), asyncio.Semaphore(self.in_flight)
            self._worker = loop.create_task(self._work())
        tokens = list(tokens) if tokens is not None else [0] * len(rows)
        chunks = self._chunks(list(rows), tokens)
        futures = [loop.create_future() for _ in chunks]
        self._queue.extend((rows, cost, future) for (rows, cost), future in zip(chunks, futures))
        self._arrived.set()
        try:
            results = await asyncio.gather(*futures)
        except asyncio.CancelledError:
            for future in futures:
                future.cancel()
            raise
        return [result for chunk in results for result in chunk]

    def _chunks(self, rows, tokens):
        """(rows, tokens) pieces of one request, each within a batch's rows and token budget."""
        chunks, start = [], 0
        budget = self.max_batch_tokens or float("inf")
        while start < len(rows):
            end, total = start, 0
            while end < len(rows) and end - start < self.max_batch_size and (
                    end == start or total + tokens[end] <= budget):
                total += tokens[end]
                end += 1
            chunks.append((rows[start:end], total))
            start = end
        return chunks

    def _pending(self):
        """(rows, tokens) waiting whose callers are still there."""
        live = [(len(rows), cost) for rows, cost, future in self._queue if not future.done()]
        return sum(n for n, _ in live), sum(c for _, c in live)

    def _full(self):
        rows, tokens = self._pending()
        return rows >= self.max_batch_size or (self.max_batch_tokens is not None and tokens >= self.max_batch_tokens)

    async def _work(self):
        loop = asyncio.get_running_loop()
        while True:
            while not self._queue:
                self._arrived.clear()
                await self._arrived.wait()
            await self._slots.acquire()  # a batch in flight ends before more than `in_flight` run
            deadline = loop.time() + self.timeout
            while not self._full() and loop.time() < deadline:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), deadline - loop.time())
                except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
                    break
            batch, size, tokens = [], 0, 0
            budget = self.max_batch_tokens or float("inf")
            while self._queue and size + len(self._queue[0][0]) <= self.max_batch_size and (
                    not batch or tokens + self._queue[0][1] <= budget):
                rows, cost, future = self._queue.popleft()
                if not future.done():  # its caller is still there
                    batch.append((rows, future))
                    size, tokens = size + len(rows), tokens + cost
            if not batch:
                self._slots.release()
                continue
            if self.on_batch:
                self.on_batch(size)
            task = loop.create_task(self._run_batch(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run_batch(self, batch):
        try:
            results = await asyncio.get_running_loop().run_in_executor(None, self.run, [rows for rows, _ in batch])
        except Exception as e:  # the model failed: every caller of the batch hears why
            for _, future in batch:
                if not future.done():
                    future.set_exception(e)
            return
        finally:
            self._slots.release()
        for (_, future), result in zip(batch, results):
            if not future.done():
                future.set_result(result)
