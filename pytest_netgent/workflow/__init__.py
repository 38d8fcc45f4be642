"""Workflows as files: what users write and what the cache holds, and nothing that runs.

- :mod:`.spec`: the ``*.netgent.yaml`` workflow document, checked line by line;
- :mod:`.yamlsource`: YAML read with each value's line;
- :mod:`.automaton`: the compiled states (checks and actions), the cache's format;
- :mod:`.store`: the cache files beside the workflows, written atomically under a lock;
- :mod:`.secrets`: a workflow's secrets, read from the environment;
- :mod:`.messages`: NetGent's message models;
- :mod:`.window`: browser window sizes as written.
"""
