"""Per-fact grades: who grades each key fact, and the credit fact_recall takes from them."""
