"""A real HTTP server for tests, served from a daemon thread of the test process.

The part every test server shares: start serving, stop (shut down, close the socket, join the
thread — idempotent), use as a context manager, and the bound port. Subclasses build their own
`http.server` instance and hand it to `_serve`.
"""

from __future__ import annotations

import threading
from http.server import HTTPServer
from typing import Self


class ServedInThread:
    def __init__(self) -> None:
        # Set while stopping, so slow or stalled handlers can give up early.
        self.stopping = threading.Event()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _serve(self, httpd: HTTPServer, name: str) -> None:
        self.stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def stop(self) -> None:
        """Stop serving, close the listening socket and join the serving thread. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"the {type(self).__name__} is not running; call start() first")
        return int(self._httpd.server_address[1])
