-- cost_repeatability: run-to-run spread per (target, environment, figure): the fine-tune's tokens/s per
-- preset and every hardware measurement (benchmark, metric). cv = stdev / mean over runs (issue 10.4);
-- the cost model's interval uses the tokens/s CV (tasks/cost/table.py, smoothed bootstrap). Figures measured
-- by different methods never share a row: method_version is the benchmark's version for a hardware
-- figure and the probe's version for a fine-tune (e.g. GEMM v4 reports the MAMF statistic, v3 did not).
with ft as (
    select r.target, r.environment_id, 'finetune' as benchmark, f.preset as metric, 'tokens/s' as unit,
           r.probe_version as method_version, f.tokens_per_s as value
    from runs r
    join finetunes f using (run_id)
    where f.status in ('ok', 'unstable') and f.tokens_per_s > 0  -- measured (issue 37.5)
      and ($target is null or r.target = $target)
    -- the instance-level figure per (run, preset), as in cost_runs.sql
    qualify row_number() over (partition by r.run_id, f.preset
                               order by coalesce(f.n_gpus, 1) desc, f.tokens_per_s desc) = 1
),
hw as (
    select r.target, r.environment_id, m.benchmark, m.metric, m.unit, m.benchmark_version as method_version,
           m.value
    from runs r
    join measurements m using (run_id)
    where ($target is null or r.target = $target)
),
figures as (
    select * from ft
    union all
    select * from hw
),
spread as (
    select target, environment_id, benchmark, metric, unit, method_version, count(*) as runs,
           avg(value) as mean,
           stddev_samp(value) as stdev, stddev_samp(value) / nullif(avg(value), 0) as cv,
           min(value) as min_value, max(value) as max_value
    from figures
    group by target, environment_id, benchmark, metric, unit, method_version
),
final as (
    select s.*, e.driver, e.cuda_runtime, e.cudnn, e.torch, e.container_image
    from spread s
    left join environments e using (environment_id)
    order by s.target, s.benchmark, s.metric, s.environment_id, s.method_version
)
select * from final
