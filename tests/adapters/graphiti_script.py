"""Graphiti's structured-output steps answered by the scripted model: one canned reply per
response schema Graphiti asks for (shared by the Graphiti tests and the memory-systems bench's
test). Importing it needs no Graphiti."""

from __future__ import annotations

import json

ENTITIES = {"extracted_entities": [{"name": "Widget line", "entity_type_id": 0},
                                   {"name": "Plant 7", "entity_type_id": 0}]}
EDGES = {"edges": [{"source_entity_name": "Widget line", "target_entity_name": "Plant 7",
                    "relation_type": "COUNTED_AT",
                    "fact": "The widget count of the widget line changed at Plant 7"}]}
RULES = [
    {"schema": "ExtractedEntities", "text": json.dumps(ENTITIES)},
    {"schema": "ExtractedEdges", "text": json.dumps(EDGES)},
    {"schema": "NodeResolutions", "text": json.dumps({"entity_resolutions": []})},
    {"schema": "EdgeDuplicate", "text": json.dumps({"duplicate_facts": [],
                                                    "contradicted_facts": []})},
    {"schema": "SummarizedEntities", "text": json.dumps({"summaries": []})},
    {"schema": "EntitySummary", "text": json.dumps({"summary": "A thing in the records."})},
    {"schema": "Summary", "text": json.dumps({"summary": "A thing in the records."})},
    {"schema": "EdgeTimestamps", "text": json.dumps({"valid_at": None, "invalid_at": None})},
]
