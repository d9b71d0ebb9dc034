"""What every scoring room stands on: the stored run a scorer reads (run_input), the
shape of scores.json (types) and of each question's detail in it (detail), the scoring condition
(condition) and gold errata (errata). Imports no other room of scoring but text."""
