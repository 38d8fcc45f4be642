"""A live channel page played by Plyr (npm ``plyr``) through hls.js (npm ``hls.js``), fed
by a small live HLS origin of ours (``corpus/apps/plyr_live/origin.py``): a sliding-window
playlist over the 360p test-card segments of ``fixtures/media/vod``, no end list, a viewer
count that moves every 5 s. The page (``corpus/apps/plyr_live/site``) is ours; the player,
its controls and the streaming are the two libraries'."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpus.serving import PYTHON, REPO, ROOT, AppError, Launch, app

FILES = {
    "plyr": ("plyr.min.js", "plyr.css", "plyr.svg"),
    "hls.js": ("hls.min.js",),
}
"""The files of each npm package the page loads from ``/static/``."""
VERSIONS = {"plyr": "3.8.4", "hls.js": "1.7.4"}


@app("plyr-live")
def _plyr_live(folder: Path, port: int) -> Launch:
    """The origin serving Channel 1's page, its playlists and segments."""
    site = folder / "site"
    shutil.copytree(ROOT / "apps" / "plyr_live" / "site", site)
    for package, names in FILES.items():
        dist = REPO / "node_modules" / package / "dist"
        for name in names:
            if not (dist / name).is_file():
                raise AppError(
                    f"{dist / name} is missing: npm install --no-save --no-package-lock "
                    f"{package}@{VERSIONS[package]} (the README's first command does)"
                )
            shutil.copy(dist / name, site / "static" / name)
    origin = ROOT / "apps" / "plyr_live" / "origin.py"
    media = REPO / "fixtures" / "media" / "vod" / "360p"
    return Launch([PYTHON, str(origin), "--port", str(port), "--site", str(site),
                   "--media", str(media)])  # fmt: skip
