-- cost_summary: one row per (target, preset) from the priced runs in _cost_runs (see cost_runs.sql).
-- X = median tokens/s over successful runs; P = mean of the runs' as-of prices; p counts fine-tune
-- attempts in the window from both sources (bundle, prefect): failed/crashed = failure, completed =
-- success, skipped/not_applicable/cancelled excluded. cv_within = run-to-run CV of tokens/s within
-- each environment, pooled (weighted by runs) over environments with >= 2 runs (repeatability, 10.4).
with per_env as (
    select target, preset, environment_id, count(*) as n,
           stddev_samp(tokens_per_s) / avg(tokens_per_s) as cv
    from _cost_runs
    group by target, preset, environment_id
),
cv as (
    select target, preset, sum(cv * n) / sum(n) as cv_within
    from per_env
    where n >= 2
    group by target, preset
),
att as (
    select a.target, a.state
    from attempts a
    left join runs r using (run_id)
    where a.task = $task
      and coalesce(a.started_at, r.started_at) > $start
      and coalesce(a.started_at, r.started_at) <= $end
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
),
rel as (
    select target, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    group by target
),
agg as (
    select target, preset, count(*) as runs,
           median(tokens_per_s) as tokens_per_s,
           avg(price_per_hour) as price_per_hour,
           count(price_per_hour) as priced_runs,
           arg_max(price_effective_from, started_at) as price_effective_from,
           arg_max(price_last_seen_at, started_at) as price_last_seen_at,
           arg_max(price_source, started_at) as price_source,
           max(started_at) as last_run_at,
           max(gpu_count) as gpu_count,
           median(mfu) as mfu,
           median(kwh_per_mtok) as kwh_per_mtok,
           median(scaling_efficiency) as scaling_efficiency,
           max(params_total) as params_total,
           arg_max(mode, started_at) as mode
    from _cost_runs
    group by target, preset
),
final as (
    select agg.*, cv.cv_within,
           coalesce(rel.attempts, 0) as attempts,
           coalesce(rel.failed_attempts, 0) as failed_attempts
    from agg
    left join cv using (target, preset)
    left join rel using (target)
    order by target, preset
)
select * from final
