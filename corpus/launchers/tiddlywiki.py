"""TiddlyWiki 5, the single-page wiki, run by its own Node.js server (the "server" edition:
the TiddlyWeb sync adaptor saves every edit back to files in the wiki folder).

The seed is a lab notebook of made-up network experiments: eight tiddlers from
``corpus/apps/tiddlywiki/tiddlers/`` (an Experiment Index, a Lab Setup, five experiments
with result tables, Open Questions), tagged Experiment, Results, Latency, TCP, QUIC, Todo,
Setup and Index, with fixed created/modified dates and links between them. The story at
start shows Experiment Index and Lab Setup. The official plugin library (an iframe on
tiddlywiki.com) is taken out of the control panel, so nothing is loaded from the internet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus.serving import REPO, ROOT, AppError, Launch, app

TIDDLYWIKI = REPO / "node_modules" / "tiddlywiki"
SEED = ROOT / "apps" / "tiddlywiki" / "tiddlers"

CONFIG: dict[str, str] = {
    "$:/SiteTitle": "Network Lab Notebook",
    "$:/SiteSubtitle": "Notes on the spring series of network experiments",
    "$:/DefaultTiddlers": "[[Experiment Index]] [[Lab Setup]]",
    # The same title as the core's shadow, without its $:/tags/PluginLibrary tag: the
    # control panel then lists no library to open from tiddlywiki.com.
    "$:/config/OfficialPluginLibrary": "",
}
"""System tiddlers written into the wiki: its title, the story at start, no plugin library."""


def _tid(title: str, text: str) -> str:
    """A ``.tid`` file holding one tiddler with fixed dates."""
    return (
        f"created: 20240301080000000\nmodified: 20240301080000000\ntitle: {title}\n"
        f"type: text/vnd.tiddlywiki\n\n{text}\n"
    )


def make_wiki(wiki: Path) -> None:
    """A wiki folder of the server edition with the seed tiddlers and the config."""
    info = json.loads((TIDDLYWIKI / "editions" / "server" / "tiddlywiki.info").read_text())
    info["description"] = "Network Lab Notebook (corpus seed)"
    tiddlers = wiki / "tiddlers"
    tiddlers.mkdir(parents=True)
    (wiki / "tiddlywiki.info").write_text(json.dumps(info, indent=2) + "\n")
    for seed in sorted(SEED.glob("*.tid")):
        shutil.copy(seed, tiddlers / seed.name)
    for number, (title, text) in enumerate(CONFIG.items()):
        (tiddlers / f"config{number}.tid").write_text(_tid(title, text), encoding="utf-8")


@app("tiddlywiki")
def _tiddlywiki(folder: Path, port: int) -> Launch:
    """TiddlyWiki's Node.js server on a fresh copy of the lab-notebook wiki."""
    boot = TIDDLYWIKI / "tiddlywiki.js"
    node = shutil.which("node")
    if not boot.is_file() or node is None:
        raise AppError(
            f"{boot} or node is missing: npm install --no-save --no-package-lock "
            "tiddlywiki@5.4.1 (and Node.js)"
        )
    make_wiki(folder / "wiki")
    command = [node, str(boot), "wiki", "--listen", "host=127.0.0.1", f"port={port}"]
    return Launch(command, ready_path="/status", env={"HOME": str(folder)})
