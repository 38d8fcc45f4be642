"""Network conditions on the wire, per item: :mod:`.link` puts a
:class:`~pytest_netgent.conditions.Condition` on the worker's namespace, :mod:`.plugin`
decides which condition each item gets and holds it around the item's browser. Below
them: :mod:`.netlink` makes links, addresses, routes and queues over netlink (pyroute2),
:mod:`.netem` tells whether the kernel has netem, :mod:`.forwarding` switches the host's
IPv4 forwarding on for uplinks and back, :mod:`.bridge` carries a namespace's
connections to servers on the host's loopback."""
