"""Network conditions on the wire, per item: :mod:`.link` puts a
:class:`~pytest_netgent.conditions.Condition` on the worker's namespace, :mod:`.plugin`
decides which condition each item gets and holds it around the item's browser."""
