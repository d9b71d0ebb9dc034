"""A memory adapter whose options carry secrets, for the secrets test."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from lens.adapters.sqlite_fts import SqliteFtsAdapter


class SecretOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    password: str
    dsn: str


class SecretHoldingAdapter(SqliteFtsAdapter):
    Options = SecretOptions  # type: ignore[assignment]

    def __init__(self, password: str, dsn: str) -> None:
        super().__init__()
        self._credentials = (password, dsn)
