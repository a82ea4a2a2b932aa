"""costgap tasks: plain functions that compute (probe, land, validate, pricing, cost).

Nothing here imports Prefect at module level; flows/ wraps these functions as Prefect tasks.
"""
