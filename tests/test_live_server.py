"""The live server that browser tests load pages from answers as a real server does."""


def test_the_live_server_sends_each_write_at_once(live_server):
    # tests/conftest.py: without TCP_NODELAY a response's body waits 40 ms for the delayed
    # ACK of its headers, on most requests of a browser walk.
    handler = live_server.thread.httpd.RequestHandlerClass
    assert handler.disable_nagle_algorithm is True
