-- cost_summary: one row per (target, preset) from the priced runs in _cost_runs (see cost_runs.sql).
-- The price shown (effective_from, last_seen_at -> stale, source) is the period that priced the latest run.
-- X = median tokens/s over successful runs; P = mean of the runs' as-of prices; p counts fine-tune
-- attempts in the window from both sources (bundle, prefect; see `counted`): failed/crashed = failure.
-- cv_within = run-to-run CV of tokens/s within each environment, pooled (weighted by runs) over environments with >= 2 runs (repeatability, 10.4).
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
counted as (
    -- Fine-tune attempts: 'finetune' (the whole step) counts for every preset of the target,
    -- 'finetune:<preset>' for that preset only ('finetune_ddp:*' multi-GPU tries are kept apart); a
    -- Prefect probe process that failed or crashed ($prefect_task: no bundle survived to say so) is a
    -- failed attempt for every preset. skipped / not_applicable / cancelled are not attempts at the work.
    select target, state, started_at, run_id,
           case when starts_with(task, $task || ':') then substr(task, length($task) + 2) end as preset
    from attempts
    where (task = $task or starts_with(task, $task || ':')
           or (source = 'prefect' and task = $prefect_task and state in ('failed', 'crashed')))
      and state not in ('skipped', 'not_applicable', 'cancelled')
),
att as (
    -- an attempt's time is its own started_at, else its run's (bundle attempts may not carry one)
    select c.target, c.preset, c.state
    from counted c
    where c.started_at > $start and c.started_at <= $end
    union all
    select c.target, c.preset, c.state
    from counted c
    join (select run_id, started_at from runs where started_at > $start and started_at <= $end) w using (run_id)
    where c.started_at is null
),
rel_preset as (
    select target, preset, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is not null
    group by target, preset
),
rel_all as (
    select target, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is null
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
           coalesce(rp.attempts, 0) + coalesce(ra.attempts, 0) as attempts,
           coalesce(rp.failed_attempts, 0) + coalesce(ra.failed_attempts, 0) as failed_attempts
    from agg
    left join latest_price lp on lp.target = agg.target and lp.effective_from = agg.price_effective_from
    left join cv on cv.target = agg.target and cv.preset = agg.preset
    left join rel_preset rp on rp.target = agg.target and rp.preset = agg.preset
    left join rel_all ra on ra.target = agg.target
    order by agg.target, agg.preset
)
select * from final
