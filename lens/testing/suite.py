"""The conformance suite as pytest tests: subclass :class:`AdapterConformance`.

.. code-block:: python

    from lens.testing import AdapterConformance
    from my_memory import MyAdapter

    class TestMyAdapter(AdapterConformance):
        def make_adapter(self):
            return MyAdapter(path=":memory:")

Every check becomes one test method (``test_exact_phrase_found``, …), so a failure names the
contract rule that broke. A check the adapter declares it does not support (no date filters, no
search) is reported as skipped with the reason. Tests run each check with ``anyio.run``, so no
async pytest plugin is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import anyio

from lens.memory.adapter import MemoryAdapter, SyncMemoryAdapter, create_adapter
from lens.memory.gateway_access import NoGateway
from lens.testing.conformance import CHECKS, run_check


class AdapterConformance:
    """Base class for a pytest test class that runs the conformance suite on one adapter.

    Override :meth:`make_adapter`, or set ``adapter_name`` (and ``adapter_options``) to test an
    adapter lens can create by name.
    """

    adapter_name: ClassVar[str | None] = None
    adapter_options: ClassVar[dict[str, Any]] = {}
    check_timeout_s: ClassVar[float] = 600.0

    def make_adapter(self) -> MemoryAdapter | SyncMemoryAdapter:
        if self.adapter_name is None:
            raise NotImplementedError("override make_adapter() or set adapter_name")
        return create_adapter(self.adapter_name, dict(self.adapter_options))

    def run_conformance_check(self, name: str) -> None:
        import pytest

        no_gateway: list[NoGateway] = []

        def factory() -> MemoryAdapter | SyncMemoryAdapter:
            try:
                return self.make_adapter()
            except NoGateway as exc:
                no_gateway.append(exc)
                raise

        result = anyio.run(run_check, name, factory, self.check_timeout_s)
        if no_gateway:
            # Said exactly, not failed: the check needs what only `lens adapters check` opens.
            pytest.skip(f"{name}: not checked here: the adapter calls models through lens's "
                        "model gateway, which this pytest form does not open; `lens adapters "
                        "check NAME --options JSON` runs the same checks with a gateway")
        if result.status == "skipped":
            pytest.skip(f"{name}: {result.detail}")
        if result.status == "failed":
            pytest.fail(f"{name}: {result.detail}", pytrace=False)


def _make_test(name: str) -> Callable[[AdapterConformance], None]:
    def test(self: AdapterConformance) -> None:
        self.run_conformance_check(name)

    test.__name__ = f"test_{name}"
    test.__doc__ = CHECKS[name].__doc__
    return test


for _name in CHECKS:
    setattr(AdapterConformance, f"test_{_name}", _make_test(_name))
