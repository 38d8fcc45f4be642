"""A video.js player page playing HLS."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpus.serving import PYTHON, REPO, ROOT, AppError, Launch, app


@app("videojs")
def _videojs(folder: Path, port: int) -> Launch:
    """A video.js player page (its own skin and controls) playing HLS made by ffmpeg."""
    dist = REPO / "node_modules" / "video.js" / "dist"
    if not (dist / "video.min.js").is_file():
        raise AppError(
            f"{dist / 'video.min.js'} is missing: npm install --no-save --no-package-lock "
            "video.js@8.24.1 (the README's first command does)"
        )
    site = folder / "site"
    shutil.copytree(REPO / "fixtures" / "media" / "vod", site / "media")
    (site / "media" / "master.m3u8").write_text(HLS_MASTER)
    for name in ("video.min.js", "video-js.min.css"):
        shutil.copy(dist / name, site / name)
    shutil.copytree(ROOT / "apps" / "player", site, dirs_exist_ok=True)
    return Launch([PYTHON, "-m", "http.server", "-b", "127.0.0.1", "-d", "site", str(port)])


HLS_MASTER = """#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=150000,RESOLUTION=426x240
240p/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=250000,RESOLUTION=640x360
360p/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=450000,RESOLUTION=960x540
540p/index.m3u8
"""
