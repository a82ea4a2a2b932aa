"""Multi-GPU: the all-reduce entry and its bandwidth formulas, and the data-parallel scaling run,
one worker process per GPU that the launcher starts, watches and kills at its deadline."""
