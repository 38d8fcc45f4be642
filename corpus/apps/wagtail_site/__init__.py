"""A small Wagtail CMS project for the corpus: a home page, a blog index and its blog posts."""
