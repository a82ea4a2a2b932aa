-- cost_run_points: each priced run of _cost_runs (cost_priced_runs.sql, materialised by
-- tasks/cost/inputs.py price_runs over one window), for the gap chart's per-run points
-- (tasks/cost/run_points.py). Inputs only: the run's as-of price in the reporting currency and its tokens/s.
with final as (
    select run_id, target, preset, started_at, tokens_per_s, price_per_hour
    from _cost_runs
    where period = 0 and price_per_hour is not null
    order by preset, started_at, target
)
select * from final
