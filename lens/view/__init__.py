"""``lens view``: a local web viewer of run directories, live while a run is in flight.

``index`` keeps what the viewer knows of a run current by reading only what the run appended;
``query`` filters and orders its questions; ``fragments`` renders the report's and ``lens
compare``'s content (lens.report's own blocks) in a worker process, ``jobs`` runs them there;
``pages`` builds the HTML and ``app`` serves it (Starlette, the ``view`` extra).
"""
