"""A MkDocs Material site, alone or embedding another site's application."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpus.serving import PYTHON, ROOT, AppError, Launch, app, require, run_setup


@app("mkdocs-material")
def _mkdocs_material(folder: Path, port: int) -> Launch:
    """A documentation site built with MkDocs and the Material theme (navigation tabs,
    a search overlay run by a web worker), served as static files."""
    require("material")
    config = ROOT / "apps" / "docs" / "mkdocs.yml"
    site = str(folder / "site")
    run_setup([PYTHON, "-m", "mkdocs", "build", "-q", "-f", str(config), "-d", site], folder)
    return Launch([PYTHON, "-m", "http.server", "-b", "127.0.0.1", "-d", "site", str(port)])


@app("docs-embed")
def _docs_embed(folder: Path, port: int, frame: str = "") -> Launch:
    """The MkDocs Material site with one more page, ``/guide/dashboard/``, that embeds
    ``frame`` (another site's application) in an iframe, as documentation embeds demos."""
    require("material")
    if not frame:
        raise AppError("docs-embed needs the URL it frames: serve('docs-embed', frame=URL)")
    source = folder / "source"
    shutil.copytree(ROOT / "apps" / "docs", source)
    (source / "docs" / "guide" / "dashboard.md").write_text(
        "# City dashboard\n\nThe dashboard below is served by its own application and "
        "embedded here.\n\n"
        f'<iframe id="dashboard" title="City dashboard" src="{frame}" width="100%" '
        'height="560"></iframe>\n',
        encoding="utf-8",
    )
    run_setup([PYTHON, "-m", "mkdocs", "build", "-q", "-f", str(source / "mkdocs.yml"),
          "-d", str(folder / "site")], folder)  # fmt: skip
    return Launch([PYTHON, "-m", "http.server", "-b", "127.0.0.1", "-d", "site", str(port)])
