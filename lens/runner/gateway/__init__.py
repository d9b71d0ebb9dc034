"""lens's metering model gateway: the server is :mod:`lens.runner.gateway.server` (imported only
by a run that needs it), which adapters use it is :mod:`lens.runner.gateway.plan`."""
