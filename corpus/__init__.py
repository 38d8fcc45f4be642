"""Real open-source web applications, at their released versions, that the corpus drives.

Nobody on this project wrote them: Django's admin, Datasette, sqlite-web, a MkDocs
Material site, Jupyter Notebook, a video.js player page, and Panel, whose stock widgets
Bokeh renders in nested shadow roots (the dashboard's few lines of Panel code are ours),
also framed by the MkDocs site from another host name. Each is installed from PyPI
(the ``corpus`` extra) or npm (video.js, by the README's first command), started here on
127.0.0.1 on a free port with data made on the spot, and stopped after use::

    with serve("datasette") as url:
        ...

``python -m corpus serve NAME`` runs one by hand and prints its URL.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent


class AppError(RuntimeError):
    """An application of the corpus is not installed or did not start."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Launch:
    """How to start one application: the command, where, and the page that says it is up."""

    command: list[str]
    ready_path: str = "/"
    cwd: Path | None = None
    env: dict[str, str] | None = None


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # 127.0.0.1 only
                if response.status < 500:
                    return
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise AppError(f"{url} did not start (exit {process.poll()}):\n{tail}")
        time.sleep(0.2)


@contextmanager
def _process(launch: Launch, port: int, folder: Path) -> Iterator[str]:
    url = f"http://127.0.0.1:{port}"
    log = folder / "server.log"
    env = {**os.environ, **(launch.env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            launch.command, cwd=launch.cwd or folder, env=env, stdout=out, stderr=out,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            _wait_ready(url + launch.ready_path, process, log, seconds=60)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        command, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if result.returncode:
        raise AppError(
            f"{' '.join(command)} failed:\n{result.stdout[-1500:]}{result.stderr[-1500:]}"
        )


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as error:
        raise AppError(
            f"{module} is not installed: pip install -r corpus/requirements.txt (the corpus's "
            "applications at the releases its states were written for)"
        ) from error


Setup = Callable[..., Launch]
"""Makes an application's launch: called with its folder, its port and the parameters
:func:`serve` was given."""
APPS: dict[str, Setup] = {}


def app(name: str) -> Callable[[Setup], Setup]:
    def register(setup: Setup) -> Setup:
        APPS[name] = setup
        return setup

    return register


@contextmanager
def serve(name: str, **params: str) -> Iterator[str]:
    """Start the corpus application ``name`` on 127.0.0.1; yield its URL; stop it.
    ``params`` go to its setup (the embedding site takes the URL it frames)."""
    if name not in APPS:
        raise AppError(f"unknown corpus application {name!r}: one of {', '.join(APPS)}")
    folder = Path(tempfile.mkdtemp(prefix=f"netgent-corpus-{name}-"))
    try:
        port = free_port()
        launch = APPS[name](folder, port, **params)
        with _process(launch, port, folder) as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the applications ------------------------------------------------------------------

PYTHON = sys.executable
ADMIN_PASSWORD = "corpus-admin-pass"  # the Django admin's local superuser, made below


@app("django-admin")
def _django_admin(folder: Path, port: int) -> Launch:
    """Django's admin site (server-rendered forms, login, changelists with search)."""
    _require("django")
    env = {"DJANGO_SETTINGS_MODULE": "admin_site.settings", "PYTHONPATH": str(ROOT / "apps"),
           "CORPUS_DB": str(folder / "db.sqlite3")}  # fmt: skip
    _run([PYTHON, "-m", "django", "migrate", "--noinput"], folder, env)
    _run([PYTHON, "-m", "django", "shell", "-c", ADMIN_SEED], folder, env)
    command = [PYTHON, "-m", "django", "runserver", "--noreload", "--insecure"]
    return Launch([*command, f"127.0.0.1:{port}"], "/admin/login/", env=env)


ADMIN_SEED = f"""
from django.contrib.auth.models import User, Group
User.objects.create_superuser("admin", "admin@example.test", "{ADMIN_PASSWORD}")
for name in ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]:
    User.objects.create_user(name, f"{{name}}@example.test", "x", first_name=name.title())
for name in ["editors", "viewers"]:
    Group.objects.create(name=name)
"""


def cities_db(path: Path, rows: int = 600) -> None:
    """A SQLite database of made-up cities, the same every time."""
    import sqlite3

    countries = ["Atlantis", "Borduria", "Freedonia", "Genovia", "Latveria", "Ruritania"]
    con = sqlite3.connect(path)
    con.execute(
        "create table cities (id integer primary key, name text, country text, population integer)"
    )
    con.executemany(
        "insert into cities values (?, ?, ?, ?)",
        [
            (i, f"City {i:03d}", countries[i % len(countries)], (i * 7919) % 900_000 + 1000)
            for i in range(1, rows + 1)
        ],
    )
    con.commit()
    con.close()


@app("datasette")
def _datasette(folder: Path, port: int) -> Launch:
    """Datasette: a data browser with filter forms, facets and keyset pagination."""
    _require("datasette")
    cities_db(folder / "atlas.db")
    command = [PYTHON, "-m", "datasette", "serve", "atlas.db", "-h", "127.0.0.1", "-p"]
    return Launch([*command, str(port), "--setting", "default_page_size", "50"])


@app("sqlite-web")
def _sqlite_web(folder: Path, port: int) -> Launch:
    """sqlite-web: a Flask database browser (tables, content pages, a SQL query form)."""
    _require("sqlite_web")
    cities_db(folder / "atlas.db")
    command = [
        PYTHON,
        "-m",
        "sqlite_web.sqlite_web",
        "-H",
        "127.0.0.1",
        "-p",
        str(port),
        "-x",
        "-r",
    ]
    return Launch([*command, "atlas.db"])


@app("mkdocs-material")
def _mkdocs_material(folder: Path, port: int) -> Launch:
    """A documentation site built with MkDocs and the Material theme (navigation tabs,
    a search overlay run by a web worker), served as static files."""
    _require("material")
    _run([PYTHON, "-m", "mkdocs", "build", "-q", "-f", str(ROOT / "apps" / "docs" / "mkdocs.yml"),
          "-d", str(folder / "site")], folder)  # fmt: skip
    return Launch([PYTHON, "-m", "http.server", "-b", "127.0.0.1", "-d", "site", str(port)])


@app("docs-embed")
def _docs_embed(folder: Path, port: int, frame: str = "") -> Launch:
    """The MkDocs Material site with one more page, ``/guide/dashboard/``, that embeds
    ``frame`` (another site's application) in an iframe, as documentation embeds demos."""
    _require("material")
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
    _run([PYTHON, "-m", "mkdocs", "build", "-q", "-f", str(source / "mkdocs.yml"),
          "-d", str(folder / "site")], folder)  # fmt: skip
    return Launch([PYTHON, "-m", "http.server", "-b", "127.0.0.1", "-d", "site", str(port)])


@app("notebook")
def _notebook(folder: Path, port: int) -> Launch:
    """Jupyter Notebook 7: a single-page app with a file browser and a code editor."""
    _require("notebook")
    (folder / "work").mkdir()
    # a notebook for each workflow: one item's kernel session (left to the server when
    # its page is left) is never the next item's
    for name in ("analysis.ipynb", "scratch.ipynb"):
        (folder / "work" / name).write_text(NOTEBOOK)
    home = folder / "home"
    home.mkdir()
    env = {"HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "run"),
           "JUPYTER_PLATFORM_DIRS": "1"}  # fmt: skip
    command = [
        PYTHON, "-m", "jupyter", "notebook", "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", "--port-retries=0", "--IdentityProvider.token=",
        "--ServerApp.password=", f"--ServerApp.root_dir={folder / 'work'}",
        "--ServerApp.disable_check_xsrf=True", "--allow-root",
        # no call home: no news or update checks
        "--LabServerApp.news_url=", "--LabServerApp.check_for_updates_class="
        "jupyterlab_server.handlers.NeverCheckForUpdate",
    ]  # fmt: skip
    return Launch(command, "/api/status", env=env)


NOTEBOOK = """{"cells": [{"cell_type": "code", "execution_count": null, "id": "c1",
  "metadata": {}, "outputs": [], "source": []}],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
  "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
"""


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


@app("panel")
def _panel(folder: Path, port: int) -> Launch:
    """A Panel (HoloViz) dashboard: Bokeh widgets, each in its own open shadow root,
    nested three deep, talking to the server over a websocket."""
    _require("panel")
    script = ROOT / "apps" / "panel_dashboard" / "app.py"
    origins = [f"--allow-websocket-origin={host}:{port}" for host in ("127.0.0.1", "localhost")]
    command = [PYTHON, "-m", "panel", "serve", str(script), "--address", "127.0.0.1",
               "--port", str(port), *origins]  # fmt: skip
    # Bokeh's and Panel's JS and CSS from this server, never from their CDNs
    return Launch(command, "/app", env={"BOKEH_RESOURCES": "server"})
