"""Settings of the corpus's Wagtail site: local only, SQLite in the run's folder, nothing
that calls home (no update check, no "what's new" banner, no Gravatar)."""

import os
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
SECRET_KEY = "corpus-only-not-secret"  # a local test site
DEBUG = True  # runserver --insecure serves the admin's static files
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "wagtail_site",
    "wagtail.contrib.forms",
    "wagtail.contrib.redirects",
    "wagtail.embeds",
    "wagtail.sites",
    "wagtail.users",
    "wagtail.snippets",
    "wagtail.documents",
    "wagtail.images",
    "wagtail.search",
    "wagtail.admin",
    "wagtail",
    "modelcluster",
    "taggit",
    "django_filters",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "wagtail.contrib.redirects.middleware.RedirectMiddleware",
]
ROOT_URLCONF = "wagtail_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.debug",
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["CORPUS_DB"]}}
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
MEDIA_ROOT = os.environ["CORPUS_MEDIA"]
MEDIA_URL = "/media/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # nothing leaves the machine

WAGTAIL_SITE_NAME = "Corpus Journal"
WAGTAILADMIN_BASE_URL = os.environ.get("CORPUS_BASE_URL", "http://127.0.0.1")
WAGTAILSEARCH_BACKENDS = {"default": {"BACKEND": "wagtail.search.backends.database"}}
WAGTAIL_ENABLE_UPDATE_CHECK = False  # no request to releases.wagtail.org
WAGTAIL_ENABLE_WHATS_NEW_BANNER = False
WAGTAIL_GRAVATAR_PROVIDER_URL = None  # the default avatar, not www.gravatar.com
WAGTAILEMBEDS_FINDERS: list[dict[str, str]] = []  # no oEmbed provider is asked
