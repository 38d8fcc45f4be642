"""NetGent's own ways in: its Python SDK and the conversion of its files into workflow
items (the ``netgent`` command, :mod:`pytest_netgent.cli`, is built on them).

- :mod:`.sdk`: ``NetGent``, the controller NetGent's scripts use;
- :mod:`.convert`: NetGent's prompt files and state repositories as ``.netgent.yaml``;
- :mod:`.inputs`: what the command reads, validated.
"""
