"""Isso 0.14, a commenting server, embedded in a small static blog of ours
(corpus/apps/isso_blog): one process serves the blog's pages at / and Isso at /isso/.

Seed: three articles under /articles/; "First light with a small telescope"
(/articles/first-light.html) has a thread of five comments (two replies, a few upvotes),
posted through Isso's API on every start; the other two articles have no comments. Isso is
set up with moderation off, voting on, replies to one's own comments allowed, comments
editable and deletable by their author (for a day) and no notifications.
"""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require

CONFIG = """\
[general]
dbpath = {folder}/comments.db
host =
    http://127.0.0.1:{port}/
    http://localhost:{port}/
max-age = 1d
notify =
reply-notifications = false
gravatar = false
latest-enabled = true

[admin]
enabled = false

[moderation]
enabled = false

[server]
listen = http://127.0.0.1:{port}/
public-endpoint = http://127.0.0.1:{port}/isso

[guard]
enabled = true
ratelimit = 60
direct-reply = 30
reply-to-self = true
require-author = false
require-email = false

[hash]
salt = corpus-isso-blog-salt
"""


@app("isso")
def _isso(folder: Path, port: int) -> Launch:
    """Isso's comment threads (post, preview, reply, edit, delete, up/down votes) on a blog."""
    require("isso")
    config = folder / "isso.cfg"
    config.write_text(CONFIG.format(folder=folder, port=port))
    script = ROOT / "apps" / "isso_blog" / "serve_blog.py"
    env = {"HOME": str(folder)}
    return Launch([PYTHON, str(script), str(config), str(port)], "/isso/info", env=env)
