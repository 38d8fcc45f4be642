"""A Panel (HoloViz) dashboard."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require


@app("panel")
def _panel(folder: Path, port: int) -> Launch:
    """A Panel (HoloViz) dashboard: Bokeh widgets, each in its own open shadow root,
    nested three deep, talking to the server over a websocket."""
    require("panel")
    script = ROOT / "apps" / "panel_dashboard" / "app.py"
    origins = [f"--allow-websocket-origin={host}:{port}" for host in ("127.0.0.1", "localhost")]
    command = [PYTHON, "-m", "panel", "serve", str(script), "--address", "127.0.0.1",
               "--port", str(port), *origins]  # fmt: skip
    # Bokeh's and Panel's JS and CSS from this server, never from their CDNs
    return Launch(command, "/app", env={"BOKEH_RESOURCES": "server"})
