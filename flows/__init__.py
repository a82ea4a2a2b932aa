"""costgap flows: Prefect flows that sequence tasks (compare, probe, prices, report, rebuild, alerts, landing, budget)."""
