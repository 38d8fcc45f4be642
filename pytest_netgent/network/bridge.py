"""Connections to loopback ports inside a worker's namespace, carried to the host's
loopback, where servers started before the run listen.

One event loop on one thread (in the host's namespace, so that what it connects to is
the host's loopback) carries every connection, each as two tasks, one per direction:

* **Backpressure.** A task writes what it read and waits for the other side to take it
  (``drain()``) before it reads more, so a reader that stalls holds up its own
  connection only, and TCP tells the sender to wait.
* **Half-close.** When one side stops sending (its FIN), the other side is told the same
  (``write_eof()``), and the other direction goes on until it ends too: a client that
  shuts down its sending side still gets its reply.
* **Close.** Once both directions have ended, both sockets close; a reset or error on
  either side aborts both.

The listening sockets are made by the caller, in the namespace's own loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

CHUNK = 65536
CONNECT_TIMEOUT = 5.0


def _listening(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


class LoopbackBridge:
    """Carries connections to loopback ports of this namespace over to the host's
    loopback: ``enter_host()`` moves the calling thread into the host's namespace, and
    ``active()`` says whether this process has a namespace of its own at all."""

    def __init__(self, enter_host: Callable[[], None], active: Callable[[], bool]) -> None:
        self._enter_host = enter_host
        self._active = active
        self._lock = threading.Lock()
        self._listeners: dict[tuple[str, int], socket.socket] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[None]] = set()

    def reach(self, url: str) -> str:
        """Make a loopback ``url`` reachable from inside the namespace; "" or why not."""
        parts = urlsplit(url)
        if not self._active() or (parts.hostname or "") not in ("127.0.0.1", "localhost"):
            return ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = ("127.0.0.1", port)
        with self._lock:
            if address in self._listeners or _listening(*address):
                return ""  # bridged already, or served inside the namespace
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind(address)
            except OSError as exc:
                listener.close()
                return f"cannot listen on {address[0]}:{port} inside the namespace: {exc}"
            self._listeners[address] = listener
            self.carry(listener, address)
        return ""

    def carry(self, listener: socket.socket, target: tuple[str, int]) -> None:
        """Carry each connection ``listener`` (bound, in the caller's namespace) accepts
        to ``target`` (in the host's namespace)."""
        loop = self._start()
        future = asyncio.run_coroutine_threadsafe(self._serve(listener, target), loop)
        future.result(timeout=10)

    def _start(self) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            return self._loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self._enter_host()  # what this thread connects to is the host's loopback
            except BaseException as exc:  # handed to the caller
                failed.append(exc)
                ready.set()
                return
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="netgent-loopback-bridge", daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            self._thread = None
            loop.close()
            raise failed[0]
        self._loop = loop
        return loop

    async def _serve(self, listener: socket.socket, target: tuple[str, int]) -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._connections.add(task)
            try:
                await _connect_and_carry(reader, writer, target)
            finally:
                self._connections.discard(task)

        server = await asyncio.start_server(accepted, sock=listener, backlog=64, limit=CHUNK)
        self._servers.append(server)

    def close(self) -> None:
        """Stop carrying connections: close the listeners and every carried connection."""
        loop, self._loop = self._loop, None
        if loop is not None:
            with contextlib.suppress(Exception):  # the loop's thread already gone
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            if not loop.is_running():
                loop.close()
        self._thread = None
        for listener in self._listeners.values():
            listener.close()
        self._listeners.clear()

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        self._servers.clear()


async def _connect_and_carry(
    inner_reader: asyncio.StreamReader,
    inner_writer: asyncio.StreamWriter,
    target: tuple[str, int],
) -> None:
    """Connect to ``target`` and carry the accepted connection there and back."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # on this thread: the host's
    sock.setblocking(False)
    try:
        await asyncio.wait_for(loop.sock_connect(sock, target), CONNECT_TIMEOUT)
        outer_reader, outer_writer = await asyncio.open_connection(sock=sock, limit=CHUNK)
    except (OSError, asyncio.TimeoutError):
        sock.close()
        inner_writer.transport.abort()
        return
    writers = (inner_writer, outer_writer)
    pumps = [
        asyncio.ensure_future(_pump(inner_reader, outer_writer)),
        asyncio.ensure_future(_pump(outer_reader, inner_writer)),
    ]
    try:
        await asyncio.gather(*pumps)
    except (OSError, asyncio.IncompleteReadError):
        for writer in writers:  # a reset on one side resets the other
            writer.transport.abort()
    finally:
        for pump in pumps:
            pump.cancel()
        for writer in writers:
            writer.close()
        for writer in writers:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await writer.wait_closed()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` with backpressure; at its end, half-close
    ``writer``."""
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()  # the other side took it (or its buffer has room)
    if writer.can_write_eof() and not writer.is_closing():
        writer.write_eof()
