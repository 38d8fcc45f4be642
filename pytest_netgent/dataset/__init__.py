"""A dataset beyond one machine: shards of one run, their records, and one merged dataset.

- :mod:`.shards`: which of N shards each item lands in (balanced by the durations of
  earlier runs, kept in pytest-split's ``.test_durations`` file), and ``--netgent-shard``;
- :mod:`.record`: ``dataset.json``, what a run (or one shard of it) collected, ran and
  wrote, with a content hash of every file and of every manifest row;
- :mod:`.verify`: a shard's folder checked against its record before a merge takes
  anything from it (every path inside the shard, every file and row as the run wrote it);
- :mod:`.merge`: ``netgent merge DIR... -o OUT``, one dataset from the shards' folders,
  checked against what the run collected;
- :mod:`.card`: the dataset card (``DATASET.md``) of a run or a merge.
"""

from __future__ import annotations

from ..errors import NetgentError

SCHEMA = 1
"""The version of ``dataset.json``'s layout; a merge takes only folders of this one."""

RECORD = "dataset.json"
"""The run's record, beside ``manifest.csv`` in the artifacts folder."""

MANIFEST = "manifest.csv"
"""The run's rows, one an item, in the artifacts folder."""

CARD = "DATASET.md"
"""The dataset card, beside the record."""


class DatasetError(NetgentError):
    """A shard or merge cannot go on; the message names the folder or option at fault and
    what to do."""
