"""Django's admin site, with a superuser and users made on the spot."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, ROOT, Launch, app, require, run_setup

ADMIN_PASSWORD = "corpus-admin-pass"  # the Django admin's local superuser, made below


@app("django-admin")
def _django_admin(folder: Path, port: int) -> Launch:
    """Django's admin site (server-rendered forms, login, changelists with search)."""
    require("django")
    env = {"DJANGO_SETTINGS_MODULE": "admin_site.settings", "PYTHONPATH": str(ROOT / "apps"),
           "CORPUS_DB": str(folder / "db.sqlite3")}  # fmt: skip
    run_setup([PYTHON, "-m", "django", "migrate", "--noinput"], folder, env)
    run_setup([PYTHON, "-m", "django", "shell", "-c", ADMIN_SEED], folder, env)
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
