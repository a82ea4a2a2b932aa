-- cost_summary: one row per (target, preset) from the priced runs in _cost_runs (see cost_runs.sql).
-- The price shown (effective_from, last_seen_at -> stale, source) is the period that priced the latest run.
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
    -- an attempt's time is its own started_at, else its run's (bundle attempts may not carry one)
    select a.target, a.state
    from attempts a
    where a.task = $task and a.started_at > $start and a.started_at <= $end
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
    union all
    select a.target, a.state
    from attempts a
    join (select run_id, started_at from runs where started_at > $start and started_at <= $end) w using (run_id)
    where a.task = $task and a.started_at is null
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
           max(started_at) as last_run_at,
           max(gpu_count) as gpu_count,
           median(mfu) as mfu,
           median(kwh_per_mtok) as kwh_per_mtok,
           median(scaling_efficiency) as scaling_efficiency,
           max(params_total) as params_total,
           max(n_gpus) as n_gpus,
           arg_max(mode, started_at) as mode
    from _cost_runs
    group by target, preset
),
t as (
    select target, provider, region, instance_type,
           coalesce(cast($billing as varchar), billing_mode, 'on_demand') as billing_mode
    from targets
),
latest_price as (
    select t.target, p.effective_from, p.last_seen_at, p.source
    from t
    join prices p using (provider, region, instance_type, billing_mode)
),
final as (
    select agg.*, lp.last_seen_at as price_last_seen_at, lp.source as price_source, cv.cv_within,
           coalesce(rel.attempts, 0) as attempts,
           coalesce(rel.failed_attempts, 0) as failed_attempts
    from agg
    left join latest_price lp on lp.target = agg.target and lp.effective_from = agg.price_effective_from
    left join cv on cv.target = agg.target and cv.preset = agg.preset
    left join rel on rel.target = agg.target
    order by agg.target, agg.preset
)
select * from final
