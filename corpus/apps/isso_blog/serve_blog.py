"""Serves the static blog of ``site/`` and Isso (mounted at ``/isso``) from one origin.

Run as ``python serve_blog.py CONFIG PORT``: Isso reads CONFIG (written by the launcher, its
SQLite database in the run's folder); the seed comments below are posted through Isso's own
HTTP API (in-process, before the server listens), then one threaded server answers on
127.0.0.1:PORT until it is terminated (one process: SIGTERM stops the blog and Isso together).
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from isso import config, make_app
from werkzeug.exceptions import NotFound
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.middleware.shared_data import SharedDataMiddleware
from werkzeug.serving import run_simple
from werkzeug.test import Client

SITE = Path(__file__).resolve().parent / "site"
THREAD = "/articles/first-light.html"  # the article with comments; the others have none
TITLE = "First light with a small telescope"
# (remote address, author, email, website, text, index of the parent comment or None); the
# addresses are only labels, outside 127.0.0.*, which Isso anonymises to the visitor's own
# 127.0.0.0 (Isso refuses votes from a comment's author)
COMMENTS: list[tuple[str, str, str, str, str, int | None]] = [
    ("127.0.12.1", "Alice", "alice@example.test", "",
     "Lovely write-up! Which eyepiece did you use for **Saturn**?", None),
    ("127.0.13.1", "Bob", "", "https://bob.example.test",
     "A 70 mm refractor was my first telescope too. The Moon never gets old.", None),
    ("127.0.14.1", "Carol", "", "", "A 10 mm one, so about 70x. The rings were tiny but sharp.", 0),
    ("127.0.12.1", "Alice", "alice@example.test", "", "Thanks, I will try that next week.", 2),
    ("127.0.15.1", "", "", "", "Any tips for observing from a bright city sky?", None),
]  # fmt: skip
LIKES = [(0, "127.0.13.1"), (0, "127.0.14.1"), (1, "127.0.15.1"), (4, "127.0.12.1")]

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def seed(isso: WSGIApp) -> None:
    """Post the seed thread through Isso's HTTP API, and a few upvotes."""
    ids: list[int] = []
    for address, author, email, website, text, parent in COMMENTS:
        data = {"text": text, "author": author or None, "email": email or None,
                "website": website or None, "title": TITLE,
                "parent": ids[parent] if parent is not None else None}  # fmt: skip
        response = Client(isso).post(
            f"/new?uri={THREAD}", json=data, environ_base={"REMOTE_ADDR": address}
        )
        if response.status_code != 201:
            raise RuntimeError(f"seeding Isso failed: {response.status_code} {response.text}")
        ids.append(response.json["id"])
    for index, address in LIKES:
        response = Client(isso).post(f"/id/{ids[index]}/like", content_type="application/json",
                                     environ_base={"REMOTE_ADDR": address})  # fmt: skip
        if response.status_code != 200:
            raise RuntimeError(f"seeding Isso failed: {response.status_code} {response.text}")


def static_site(root: Path) -> WSGIApp:
    """The blog's files; a path ending in / serves its index.html."""
    files = SharedDataMiddleware(NotFound(), {"/": str(root)})

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "/").endswith("/"):
            environ["PATH_INFO"] += "index.html"
        return files(environ, start_response)

    return serve


def main(config_file: str, port: int) -> None:
    logging.basicConfig(level=logging.INFO)
    conf = config.load(config.default_file(), config_file)
    isso = make_app(conf)
    seed(isso)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    application = DispatcherMiddleware(static_site(SITE), {"/isso": isso})
    run_simple("127.0.0.1", port, application, threaded=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
