"""Jupyter Notebook 7 over a folder of fresh notebooks."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, Launch, app, require


@app("notebook")
def _notebook(folder: Path, port: int) -> Launch:
    """Jupyter Notebook 7: a single-page app with a file browser and a code editor."""
    require("notebook")
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
