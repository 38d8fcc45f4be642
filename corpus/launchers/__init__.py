"""One module an application: each registers its setup with :func:`corpus.serving.app`.
Every module of this package is imported, so adding an application is adding its module."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
