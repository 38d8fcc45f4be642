"""The smallest Django project that serves Django's own admin site, for the corpus."""
