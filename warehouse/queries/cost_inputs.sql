-- cost_inputs: the cost model's inputs per (period, target, preset) from _cost_runs (cost_priced_runs.sql).
-- Inputs only (tasks/cost/model.py computes p, R, C and the intervals):
--   runs, tokens_per_s (median: X), price_per_hour (mean of the runs' as-of prices: P), priced_runs;
--   the price period that priced the latest run (effective_from, last_seen_at, source);
--   attempts / failed_attempts (n, k) in the same period, counted as in `counted` below;
--   cv_within: run-to-run CV of tokens/s within each environment, pooled (weighted by runs) over
--   environments with >= 2 runs (repeatability, issue 10.4), for the smoothed bootstrap.
with per_env as (
    select period, target, preset, environment_id, count(*) as n,
           stddev_samp(tokens_per_s) / avg(tokens_per_s) as cv
    from _cost_runs
    group by period, target, preset, environment_id
),
cv as (
    select period, target, preset, sum(cv * n) / sum(n) as cv_within
    from per_env
    where n >= 2
    group by period, target, preset
),
counted as (
    -- Fine-tune attempts: 'finetune' (the whole step) counts for every preset of the target,
    -- 'finetune:<preset>' for that preset only ('finetune_ddp:*' multi-GPU tries are kept apart); a
    -- Prefect probe process that failed or crashed ($prefect_task: no bundle survived to say so) is a
    -- failed attempt for every preset. skipped / not_applicable / cancelled are not attempts at the work.
    select a.target, a.state, coalesce(a.started_at, r.started_at) as attempted_at,
           case when starts_with(a.task, $task || ':') then substr(a.task, length($task) + 2) end as preset
    from attempts a
    left join runs r using (run_id)
    where (a.task = $task or starts_with(a.task, $task || ':')
           or (a.source = 'prefect' and a.task = $prefect_task and a.state in ('failed', 'crashed')))
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
      and ($targets is null or list_contains($targets, a.target))
),
att as (
    -- an attempt's time is its own started_at, else its run's (bundle attempts may not carry one)
    select target, preset, state,
           (epoch_us(cast($end as timestamptz)) - epoch_us(attempted_at)) // $period_us as period
    from counted
    where attempted_at > $start and attempted_at <= $end
),
rel_preset as (
    select period, target, preset, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is not null
    group by period, target, preset
),
rel_all as (
    select period, target, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is null
    group by period, target
),
agg as (
    select period, target, preset, count(*) as runs,
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
           max(n_gpus) as n_gpus,
           arg_max(mode, started_at) as mode,
           list(tokens_per_s order by tokens_per_s) as samples
    from _cost_runs
    group by period, target, preset
),
final as (
    select agg.*, cv.cv_within,
           coalesce(rp.attempts, 0) + coalesce(ra.attempts, 0) as attempts,
           coalesce(rp.failed_attempts, 0) + coalesce(ra.failed_attempts, 0) as failed_attempts
    from agg
    left join cv using (period, target, preset)
    left join rel_preset rp using (period, target, preset)
    left join rel_all ra using (period, target)
    order by agg.period, agg.target, agg.preset
)
select * from final
