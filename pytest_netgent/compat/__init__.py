"""NetGent's own ways in: its Python SDK, the ``netgent`` command and the conversion of
its files into workflow items.

- :mod:`.sdk`: ``NetGent``, the controller NetGent's scripts use;
- :mod:`.cli`: the ``netgent`` command;
- :mod:`.convert`: NetGent's prompt files and state repositories as ``.netgent.yaml``;
- :mod:`.inputs`: what the command reads, validated.
"""
