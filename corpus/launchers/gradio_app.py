"""A Gradio 6 Blocks app: a plant-nursery catalogue of stock Gradio components (our lines in
corpus/apps/gradio_app/app.py) over a fixed seed of 20 made-up plants in five categories,
with a rule-based chatbot and a picture and clip drawn at start."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require


@app("gradio")
def _gradio(folder: Path, port: int) -> Launch:
    """Gradio: a Svelte page talking to the server over server-sent events (its queue);
    tabs, a dropdown, a slider, checkboxes, radio buttons, a table, a chatbot, an image
    and a video."""
    require("gradio")
    require("av")  # the clip of the Media tab, encoded without an ffmpeg binary
    script = ROOT / "apps" / "gradio_app" / "app.py"
    home = folder / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(folder / "gradio-cache"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "HF_HOME": str(home / ".cache" / "huggingface"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONUNBUFFERED": "1",
    }
    # run in the folder: the clip is written there, and Gradio serves files of its cwd
    return Launch([PYTHON, str(script), str(port)], "/config", cwd=folder, env=env)
