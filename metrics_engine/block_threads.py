"""The threads that evaluate a batch's blocks of keywords (metrics_engine.batch): how many
(``threads``, else $SEARCHTWEAK_METRIC_THREADS, else one per CPU), and one executor per
process, forgotten in a forked child. Results are identical for any thread count.
"""

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

THREADS_ENV = "SEARCHTWEAK_METRIC_THREADS"
threads: int | None = None
"""Threads that evaluate blocks; None → $SEARCHTWEAK_METRIC_THREADS, else os.cpu_count().
1 evaluates every block on the calling thread. Results are identical for any value."""


def thread_count() -> int:
    """The threads that evaluate blocks (see ``threads``)."""
    if threads is not None:
        return max(1, threads)
    # SEARCHTWEAK_METRIC_THREADS: threads that evaluate metric blocks, a positive integer;
    # unset, one per CPU.
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return os.cpu_count() or 1
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_ENV} must be a positive integer, not {raw!r}")
    return int(raw)


_executor: tuple[int, ThreadPoolExecutor] | None = None
_executor_lock = threading.Lock()


def _forget_executor() -> None:
    # A forked child (e.g. a prefork worker) has none of the parent's threads.
    global _executor
    _executor = None


os.register_at_fork(after_in_child=_forget_executor)


def run_blocks(evaluate_block: Callable[[int], None], starts: range) -> None:
    """evaluate_block(start) for every block; the first failing block's error is raised."""
    count = thread_count()
    if count == 1 or len(starts) == 1:
        for start in starts:
            evaluate_block(start)
        return
    global _executor
    with _executor_lock:
        if _executor is None or _executor[0] != count:
            if _executor is not None:
                _executor[1].shutdown(wait=False)
            _executor = (count, ThreadPoolExecutor(count, thread_name_prefix="metrics-core"))
        executor = _executor[1]
    # map() yields in block order, so an invalid grade is reported as without threads.
    for _ in executor.map(evaluate_block, starts):
        pass
