"""The cost model and what feeds it: inputs from SQL, the model, statistics, change points."""
