"""The package's version (pyproject.toml's, checked by the tests), for what names it:
``netgent --version``, a HAR's creator."""

__version__ = "0.1.0"
