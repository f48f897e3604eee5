"""Wait until the live server has no request left before a test's database is emptied.

A page that polls (htmx `every 2s`) can have a request in the live server's thread when
its test ends. Closing the browser context stops new ones but not that one, and on
PostgreSQL the transactional test's TRUNCATE then deadlocked with it; the next test
found the last one's rows. So the server counts its connections, and the test waits for
none (tests/conftest.py orders the wait after the page closes and before the flush).
"""

import threading
import time


class InFlight:
    """The live server's open connections, counted from accept to close."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def enter(self) -> None:
        with self._changed:
            self._count += 1

    def leave(self) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait_for_none(self, timeout: float) -> bool:
        """True once no connection is open; False if some still are after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True


def count_connections(server) -> InFlight:
    """Make a socketserver.ThreadingMixIn server count its connections (once per server).

    Counted from process_request, in the accepting thread, so a connection whose thread
    has not started yet counts too.
    """
    existing = getattr(server, "searchtweak_in_flight", None)
    if existing is not None:
        return existing
    in_flight = InFlight()
    accept, serve = server.process_request, server.process_request_thread

    def process_request(request, client_address):
        in_flight.enter()
        try:
            accept(request, client_address)
        except BaseException:
            in_flight.leave()
            raise

    def process_request_thread(request, client_address):
        try:
            serve(request, client_address)
        finally:
            in_flight.leave()

    server.process_request = process_request
    server.process_request_thread = process_request_thread
    server.searchtweak_in_flight = in_flight
    return in_flight
