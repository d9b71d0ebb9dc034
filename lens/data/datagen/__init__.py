"""A seedable generator of longitudinal LENS scopes (no model needed).

See ``docs/datasets.md``. Entry points: :func:`generate_dataset` with :class:`ScopeSpec` items,
and :func:`strict_problems` for the strict checks.
"""

from lens.data.datagen.checks import strict_problems
from lens.data.datagen.generate import ScopeSpec, dumps, generate_dataset, write_dataset

__all__ = ["ScopeSpec", "dumps", "generate_dataset", "strict_problems", "write_dataset"]
