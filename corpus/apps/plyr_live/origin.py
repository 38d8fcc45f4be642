"""A small live HLS origin (standard library only) for the corpus's Plyr channel page.

It serves one channel, "Channel 1", as a real live origin does: a master playlist
(``/live/master.m3u8``) naming one 360p rendition, whose media playlist
(``/live/360p/index.m3u8``) is a sliding window of ``WINDOW`` segments of ``SEGMENT`` s:
EXT-X-MEDIA-SEQUENCE advances by one every ``SEGMENT`` s from the server's start, there is
no EXT-X-ENDLIST, and the segments loop a pool of committed MPEG-TS files, with an
EXT-X-DISCONTINUITY where the pool starts again (and EXT-X-DISCONTINUITY-SEQUENCE counting
those that slid out of the window). Segment ``n`` is the pool's file ``n % len(pool)``;
one outside the window (not published yet, or long gone) is a 404.

Besides: the page and its static files from ``--site`` (``/`` and ``/static/<name>``),
``/api/viewers`` (a JSON viewer count that changes every 5 s, the same sequence every
start) and ``/static/blank.mp4`` (Plyr's "blank video", answered with 204 No Content).

    python origin.py --port 8080 --site SITE_DIR --media SEGMENT_DIR
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SEGMENT = 2.0
"""Seconds of media in each segment (the pool's files are 2 s each)."""
WINDOW = 6
"""Segments in the live window."""
GRACE = 4
"""Segments that stay fetchable after they leave the window (a slow player's last ones)."""
CODECS = "avc1.42c01e,mp4a.40.2"
"""H.264 Constrained Baseline 3.0 and AAC-LC: what the pool's segments hold."""
PLAYLIST = "application/vnd.apple.mpegurl"


@dataclass
class Channel:
    """The live channel: which segments are in the window at a given moment."""

    pool: list[bytes]
    started: float = field(default_factory=time.monotonic)
    wall: datetime = field(default_factory=lambda: datetime.now(UTC))

    def first(self) -> int:
        """The media sequence number of the window's first segment now."""
        return int((time.monotonic() - self.started) / SEGMENT)

    def master(self) -> str:
        """The master playlist: one rendition."""
        return (
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n"
            f'#EXT-X-STREAM-INF:BANDWIDTH=260000,AVERAGE-BANDWIDTH=230000,CODECS="{CODECS}",'
            "RESOLUTION=640x360,FRAME-RATE=24.000\n360p/index.m3u8\n"
        )

    def media(self) -> str:
        """The media playlist: the sliding window, a discontinuity at each loop."""
        first, size = self.first(), len(self.pool)
        lines = [
            "#EXTM3U",
            "#EXT-X-VERSION:3",
            f"#EXT-X-TARGETDURATION:{int(SEGMENT)}",
            f"#EXT-X-MEDIA-SEQUENCE:{first}",
            f"#EXT-X-DISCONTINUITY-SEQUENCE:{first // size}",
        ]
        for n in range(first, first + WINDOW):
            if n % size == 0 and n != first:
                lines.append("#EXT-X-DISCONTINUITY")  # the pool starts again
            if n == first or n % size == 0:
                when = self.wall + timedelta(seconds=n * SEGMENT)
                stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
                lines.append(f"#EXT-X-PROGRAM-DATE-TIME:{stamp}")
            lines += [f"#EXTINF:{SEGMENT:.3f},", f"{n}.ts"]
        return "\n".join(lines) + "\n"

    def segment(self, number: int) -> bytes | None:
        """Segment ``number``'s bytes, or None when it is not in the window (or its grace)."""
        first = self.first()
        if not first - GRACE <= number < first + WINDOW:
            return None
        return self.pool[number % len(self.pool)]

    def viewers(self) -> dict[str, int]:
        """A viewer count that moves every 5 s, the same sequence from every start."""
        tick = int((time.monotonic() - self.started) / 5)
        swing = (tick * 37) % 61 - 30
        return {"viewers": 1280 + 4 * tick % 90 + swing, "tick": tick}


class Handler(BaseHTTPRequestHandler):
    """The origin's routes; ``channel`` and ``site`` are set by :func:`main`."""

    channel: Channel
    site: Path
    server_version = "corpus-live-origin/1.0"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._file(self.site / "index.html")
        elif path == "/static/blank.mp4":
            self._send(HTTPStatus.NO_CONTENT, b"", "video/mp4")
        elif path.startswith("/static/") and "/" not in path.removeprefix("/static/"):
            self._file(self.site / "static" / path.removeprefix("/static/"))
        elif path == "/live/master.m3u8":
            self._send(HTTPStatus.OK, self.channel.master().encode(), PLAYLIST, "no-cache")
        elif path == "/live/360p/index.m3u8":
            self._send(HTTPStatus.OK, self.channel.media().encode(), PLAYLIST, "no-cache")
        elif path.startswith("/live/360p/") and path.endswith(".ts"):
            self._segment(path.removeprefix("/live/360p/").removesuffix(".ts"))
        elif path == "/api/viewers":
            body = json.dumps(self.channel.viewers()).encode()
            self._send(HTTPStatus.OK, body, "application/json", "no-cache")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    def _segment(self, number: str) -> None:
        data = self.channel.segment(int(number)) if number.isdigit() else None
        if data is None:
            self._send(HTTPStatus.NOT_FOUND, b"segment not available\n", "text/plain")
        else:
            self._send(HTTPStatus.OK, data, "video/mp2t", "max-age=60")

    def _file(self, path: Path) -> None:
        if not path.is_file():
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
            return
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self._send(HTTPStatus.OK, path.read_bytes(), kind, "no-cache")

    def _send(self, status: HTTPStatus, body: bytes, kind: str, cache: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        if cache:
            self.send_header("Cache-Control", cache)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        print(f"{self.address_string()} {format % args}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--site", type=Path, required=True, help="index.html and static/")
    parser.add_argument("--media", type=Path, required=True, help="the pool of .ts segments")
    args = parser.parse_args()
    pool = [p.read_bytes() for p in sorted(args.media.glob("*.ts"))]
    if not pool:
        parser.error(f"no .ts segments in {args.media}")
    Handler.channel, Handler.site = Channel(pool), args.site
    with ThreadingHTTPServer((args.host, args.port), Handler) as server:
        server.daemon_threads = True
        server.serve_forever()


if __name__ == "__main__":
    main()
