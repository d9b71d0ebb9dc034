"""The report's files and their pieces: the block model and its Markdown and HTML
renderings (document), what a run report says (layout), markdown, html, the per-question CSV
(csvout), inline SVG plots, number formatting (fmt), the verdict lines and the shared blocks
(judge_blocks, reference_blocks)."""
