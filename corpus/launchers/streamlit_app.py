"""A Streamlit data app: a town explorer of stock Streamlit widgets (our few dozen lines in
corpus/apps/streamlit_app/app.py) over a fixed seed of 24 made-up towns in six regions."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require


@app("streamlit")
def _streamlit(folder: Path, port: int) -> Launch:
    """Streamlit: a React page rerunning the script over a websocket at every widget change;
    a sidebar (select box, slider, checkbox, search box), tabs, a data grid, metrics, a
    button and a chat."""
    require("streamlit")
    script = ROOT / "apps" / "streamlit_app" / "app.py"
    home = folder / "home"
    home.mkdir()
    command = [
        PYTHON, "-m", "streamlit", "run", str(script),
        "--server.address", "127.0.0.1", "--server.port", str(port),
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none", "--server.runOnSave", "false",
        # Selenium's sessions post no XSRF token and may come as localhost or 127.0.0.1
        "--server.enableXsrfProtection", "false", "--server.enableCORS", "false",
        "--global.developmentMode", "false", "--server.showEmailPrompt", "false",
        # no Deploy button (it leads to Streamlit Community Cloud)
        "--client.toolbarMode", "minimal",
    ]  # fmt: skip
    # ~/.streamlit (credentials, machine id) in the run's folder, not the user's home
    env = {"HOME": str(home), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    return Launch(command, "/_stcore/health", cwd=folder, env=env)
