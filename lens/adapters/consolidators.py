"""Three consolidating baselines (see ``lens/adapters/consolidation.py`` for what they share):

- ``summary``: the new episodes are summarised in groups of ``episodes_per_fold``, then the
  group summaries are reduced, with the previous summary, into one summary, refreshed at each
  checkpoint;
- ``core``: one working-memory text folded forward, ``episodes_per_fold`` episodes at a time;
- ``faceted``: one fold per facet (entities, relations, events, causes by default), merged
  into one memory text at each checkpoint.
"""

from __future__ import annotations

from pydantic import Field

from lens.adapters.consolidation import ConsolidatingAdapter, ConsolidationOptions, render_episodes
from lens.data.dataset import Episode

DEFAULT_FACETS = {
    "entities": "the people, systems, places and things, with their current attributes",
    "relations": "how the entities relate to and depend on each other",
    "events": "what happened and when, in time order",
    "causes": "causes, effects and trends, and the evidence for them",
}


class FacetedOptions(ConsolidationOptions):
    facets: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_FACETS), min_length=1,
                                   description="facet name -> what its fold keeps")


class SummaryAdapter(ConsolidatingAdapter):
    kind = "summary"

    async def consolidate(self, episodes: list[Episode]) -> None:
        o = self.opts
        parts = []
        for group in self.batches(episodes):
            parts.append(await self.complete("group", (
                "Summarise these records. Keep every figure, name, date and record id.\n\n"
                + render_episodes(group, o.episode_chars)), group))
        previous = self.memory or "(none yet)"
        self.memory = await self.complete("reduce", (
            "Merge the previous summary and the new summaries into one summary of everything "
            f"so far, at most {o.memory_chars} characters. Keep what changed over time.\n\n"
            f"Previous summary:\n{previous}\n\nNew summaries (oldest first):\n"
            + "\n\n".join(parts)), episodes)


class CoreAdapter(ConsolidatingAdapter):
    kind = "core"

    async def consolidate(self, episodes: list[Episode]) -> None:
        o = self.opts
        for batch in self.batches(episodes):
            current = self.memory or "(empty)"
            self.memory = await self.complete("core", (
                "Here is your working memory and the next records. Rewrite the working memory "
                f"so it includes what matters in the new records, at most {o.memory_chars} "
                "characters; update facts that changed and keep their history.\n\n"
                f"Working memory:\n{current}\n\nNew records:\n"
                + render_episodes(batch, o.episode_chars)), batch)


class FacetedAdapter(ConsolidatingAdapter):
    Options = FacetedOptions
    opts: FacetedOptions
    kind = "faceted"

    def on_reset(self) -> None:
        self.facet_memory: dict[str, str] = {}

    def notes(self) -> dict[str, str]:
        facets = {f"facet:{name}": text for name, text in
                  getattr(self, "facet_memory", {}).items() if text}
        return {**super().notes(), **facets}

    async def consolidate(self, episodes: list[Episode]) -> None:
        o = self.opts
        facets: dict[str, str] = o.facets
        state = getattr(self, "facet_memory", {})
        for batch in self.batches(episodes):
            for name, keeps in facets.items():
                state[name] = await self.complete(f"facet:{name}", (
                    f"You keep the '{name}' notes: {keeps}. Update them with the new records, "
                    f"at most {o.memory_chars // len(facets)} characters.\n\n"
                    f"Current notes:\n{state.get(name) or '(empty)'}\n\nNew records:\n"
                    + render_episodes(batch, o.episode_chars)), batch)
        self.facet_memory = state
        notes = "\n\n".join(f"{name.upper()}:\n{text}" for name, text in state.items())
        self.memory = await self.complete("merge", (
            "Merge these notes into one memory, grouped by facet, without losing figures, "
            f"dates or record ids, at most {o.memory_chars} characters.\n\n{notes}"), episodes)
