-- cost_inputs: the cost model's inputs per (period, target, preset) from _cost_runs (cost_priced_runs.sql),
-- a period being one window of _cost_windows (cost_windows.sql).
-- Inputs only (tasks/cost/model.py computes p, R, C and the intervals):
--   runs, tokens_per_s (median: X), price_per_hour (mean of the runs' as-of prices: P), priced_runs;
--   the price period that priced the latest run (effective_from, last_seen_at, source);
--   attempts / failed_attempts (n, k) in the same period: the view finetune_attempts says what counts;
--   cv_within: run-to-run CV of tokens/s within each environment, pooled (weighted by runs) over
--   environments with >= 2 runs (repeatability, issue 10.4), for the smoothed bootstrap;
--   unstable_runs and unstable_windows: the runs whose steady-state rule did not converge and each one's
--   window tokens/s (tasks/cost/table.py turns them into window spreads: issue 37.5).
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
att as (
    -- what counts as a fine-tune attempt is the view finetune_attempts (migration 055); each attempt
    -- counts in every window of _cost_windows (cost_windows.sql) it falls in
    select w.period, a.target, a.preset, a.failed
    from finetune_attempts a
    join _cost_windows w on a.attempted_at > w.window_start and a.attempted_at <= w.window_end
    where a.attempted_at > $start and a.attempted_at <= $end
      and ($targets is null or list_contains($targets, a.target))
),
rel_preset as (
    select period, target, preset, count(*) as attempts,
           count(*) filter (where failed) as failed_attempts
    from att
    where preset is not null
    group by period, target, preset
),
rel_all as (
    select period, target, count(*) as attempts,
           count(*) filter (where failed) as failed_attempts
    from att
    where preset is null
    group by period, target
),
agg as (
    select period, target, preset, count(*) as runs,
           median(tokens_per_s) as tokens_per_s,
           avg(price_per_hour order by started_at, run_id) as price_per_hour,  -- ordered: the same double on every call (a parallel sum is not)
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
           list(tokens_per_s order by tokens_per_s) as samples,
           count(*) filter (where status = 'unstable') as unstable_runs,
           list(window_tokens_per_s order by started_at, run_id) filter (where status = 'unstable')
               as unstable_windows
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
