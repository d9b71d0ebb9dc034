"""The pre-flight checklist (checklist) and the rows it reads from elsewhere: context
parity (parity) and the memory state while questioned (memory_state_check); the exit status of
lens run and lens score it decides (gate)."""
