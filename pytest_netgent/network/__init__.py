"""Network conditions on the wire, per item (:mod:`.conditions` parses them):
:mod:`.netns` gives each worker a namespace of its own; :mod:`.link` puts a
:class:`~.conditions.Condition` on the worker's namespace, :mod:`pytest_netgent.plugin.shaping`
decides which condition each item gets and holds it around the item's browser. Below
them: :mod:`.netlink` makes links, addresses, routes and queues over netlink (pyroute2),
:mod:`.netem` tells whether the kernel has netem, :mod:`.forwarding` switches the host's
IPv4 forwarding on for uplinks and back, :mod:`.bridge` carries a namespace's
connections to servers on the host's loopback."""
