"""Run a test's workers on threads at once, as parallel requests or graders would."""

import threading
from collections.abc import Callable, Iterable

from django.db import connection


def run_together(work: Callable[..., None], arguments: Iterable[tuple], *,
                 timeout: float) -> None:
    """`work(*args)` on one thread per argument tuple; each closes its own database
    connection. Fails the test when a thread is still running after `timeout` seconds or
    any raised (the errors are shown)."""
    errors: list[BaseException] = []

    def guarded(*args) -> None:
        try:
            work(*args)
        except BaseException as error:  # surfaced by the caller's thread below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=guarded, args=args) for args in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert [thread.name for thread in threads if thread.is_alive()] == []
    assert not errors, errors
