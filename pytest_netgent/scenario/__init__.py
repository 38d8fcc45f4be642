"""Scenarios: several workflows and shell commands run at the same time as one test
item, with every flow of the captured traffic labelled by the member that opened it.

- :mod:`.spec`: the ``scenario:`` document and its members, checked line by line;
- :mod:`.members`: the members run side by side, stopped together;
- :mod:`.owners`: which member's process opened each flow (the kernel's record);
- :mod:`.flows`: the pcap's flows and ``flows.csv``;
- the test item, its browsers, condition and captures: :mod:`pytest_netgent.plugin.scenarios`.
"""
