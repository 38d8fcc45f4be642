"""Real open-source web applications, at their released versions, that the corpus drives.

Nobody on this project wrote them: Django's admin, Datasette, sqlite-web, a MkDocs
Material site, Jupyter Notebook, a video.js player page, Panel, whose stock widgets
Bokeh renders in nested shadow roots (the dashboard's few lines of Panel code are ours),
also framed by the MkDocs site from another host name; and, for workflows written blind
(by someone who read only the workflow format and used the application), Streamlit,
Gradio, Wagtail, Isso embedded in a blog, TiddlyWiki and a Plyr + hls.js live channel.
Each is installed from PyPI (``corpus/requirements.txt``) or npm (by the README's first
command), started here on 127.0.0.1 on a free port with data made on the spot, and
stopped after use::

    with serve("datasette") as url:
        ...

``python -m corpus serve NAME`` runs one by hand and prints its URL.
"""

from __future__ import annotations

from corpus import launchers as _launchers  # noqa: F401  (registers every application)
from corpus.launchers.databases import cities_db
from corpus.launchers.django_admin import ADMIN_PASSWORD
from corpus.serving import APPS, REPO, ROOT, AppError, Launch, app, free_port, serve

__all__ = [
    "ADMIN_PASSWORD",
    "APPS",
    "REPO",
    "ROOT",
    "AppError",
    "Launch",
    "app",
    "cities_db",
    "free_port",
    "serve",
]
