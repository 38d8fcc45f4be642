"""The ground floor: what every layer may use and that knows nothing of workflows.

- :mod:`.redaction`: secret values and their redaction, in what is written and in log records;
- :mod:`.atomic`: files written whole or not at all;
- :mod:`.leftovers`: processes, folders and host objects a killed run left, and their removal;
- :mod:`.extras`: which optional features are installed, checked without importing them;
- :mod:`.progress`: what the running item is doing, for the live status lines;
- :mod:`.version`: the package's version.
"""
