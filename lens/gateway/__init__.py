"""lens's metering model gateway: the server is :mod:`lens.gateway.server` (imported only by a
run that needs it), which adapters use it is :mod:`lens.gateway.plan`."""
