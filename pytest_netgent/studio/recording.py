"""``--netgent-video``: an item's browser as a WebM video, from the pictures of its runs.

The pictures (JPEG, each with the second it was taken, see
:class:`pytest_netgent.browser.screencast.FrameRecorder`) become VP8 frames at their own
times (a variable frame rate: a picture stays on screen until the next one), encoded by
PyAV, FFmpeg's libraries in a wheel (the ``video`` extra; nothing is fetched or run
beside Python). The file is written whole or not at all.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..system import atomic

VIDEO_FILE = "video.webm"
MAX_WIDTH = 1280
"""Widest frame, in pixels (a wider window is scaled down)."""


class VideoError(Exception):
    """The video cannot be made; the message says why."""


def missing() -> str:
    """Why videos cannot be made here ("" when they can)."""
    import importlib.util

    if importlib.util.find_spec("av") is None:
        return (
            "--netgent-video needs PyAV (FFmpeg's libraries in a wheel): "
            "pip install 'pytest-netgent[video]'"
        )
    return ""


def _size(width: int, height: int) -> tuple[int, int]:
    """The frame size for pictures of ``width`` x ``height``: at most MAX_WIDTH wide,
    both even (what a YUV 4:2:0 encoder needs)."""
    if width > MAX_WIDTH:
        height, width = round(height * MAX_WIDTH / width), MAX_WIDTH
    return max(2, width - width % 2), max(2, height - height % 2)


def write_webm(frames: list[tuple[float, bytes]], path: Path) -> Path:
    """Encode ``frames`` (seconds since the first, JPEG) into the WebM ``path``.

    Raises :class:`VideoError` when there is no picture or none can be read; a picture
    that cannot be read is left out.
    """
    import av

    if not frames:
        raise VideoError("no picture was taken")
    decoder = av.CodecContext.create("mjpeg", "r")
    ms = Fraction(1, 1000)
    last_pts = -1
    try:
        with (
            atomic.replacing(path, "wb") as out,
            av.open(out, mode="w", format="webm") as container,
        ):
            stream = None
            for seconds, jpeg in frames:
                try:
                    pictures = decoder.decode(av.Packet(jpeg))
                except av.FFmpegError:  # a damaged picture is left out
                    continue
                for picture in pictures:
                    if stream is None:
                        stream = container.add_stream("libvpx", rate=25)
                        stream.width, stream.height = _size(picture.width, picture.height)
                        stream.pix_fmt = "yuv420p"
                        stream.time_base = ms
                        stream.options = {"deadline": "realtime", "cpu-used": "8", "crf": "30"}
                        stream.bit_rate = 1_000_000
                    pts = max(round(seconds * 1000), last_pts + 1)
                    frame = picture.reformat(stream.width, stream.height, "yuv420p")
                    frame.pts, frame.time_base, last_pts = pts, ms, pts
                    container.mux(stream.encode(frame))
            if stream is None:
                raise VideoError(f"none of the {len(frames)} pictures could be read")
            container.mux(stream.encode(None))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"the video could not be encoded ({exc})") from exc
    return path
