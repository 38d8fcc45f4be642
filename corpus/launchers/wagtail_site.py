"""Wagtail 8 (Django 5.2), a CMS, with a small blog project of ours (corpus/apps/wagtail_site).

Seed, made on every start after ``migrate``: the superuser ``editor`` (password
:data:`EDITOR_PASSWORD`), a home page "Corpus Journal" at /, a blog index at /blog/ with five
published posts (a date, an intro and a StreamField body of headings and rich-text paragraphs)
and one unpublished draft, "Notes on composting (draft)". The admin is at /admin/.
"""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require, run_setup

EDITOR_PASSWORD = "corpus-editor-pass"  # the Wagtail site's local superuser, made below
SEED = "import wagtail_site.seed as seed; seed.run()"


@app("wagtail")
def _wagtail(folder: Path, port: int) -> Launch:
    """Wagtail's admin (page explorer, the page editor's StreamField and Draftail editors,
    publishing, revisions) and the blog's public pages."""
    require("wagtail")
    env = {
        "DJANGO_SETTINGS_MODULE": "wagtail_site.settings",
        "PYTHONPATH": str(ROOT / "apps"),
        "CORPUS_DB": str(folder / "db.sqlite3"),
        "CORPUS_MEDIA": str(folder / "media"),
        "CORPUS_BASE_URL": f"http://127.0.0.1:{port}",
        "CORPUS_EDITOR_PASSWORD": EDITOR_PASSWORD,
        "HOME": str(folder),
    }
    run_setup([PYTHON, "-m", "django", "migrate", "--noinput"], folder, env)
    run_setup([PYTHON, "-m", "django", "shell", "-c", SEED], folder, env)
    command = [PYTHON, "-m", "django", "runserver", "--noreload", "--insecure"]
    return Launch([*command, f"127.0.0.1:{port}"], "/admin/login/", env=env)
