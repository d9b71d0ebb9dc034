"""Per-fact grades: who grades each key fact, and where a grader's grades replace the
matcher's."""
