"""Dispatch: targets, the probe child process, fan-out, Prefect run history, the results store."""
