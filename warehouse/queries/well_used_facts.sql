-- well_used_facts: per target and figure ($metrics: 'benchmark/metric' keys), every row of the newest run
-- (started at or before $as_of, when given) that measured it: the inputs of "Is this server well used?"
-- (tasks/cost/well_used.py judges them). A figure with one row per preset (gpu_busy, sharing) keeps them
-- all; a run that lacks a figure (a bundle from before the probe measured it) leaves the next older run's,
-- or nothing ("not measured").
with m as (
    select r.target, r.run_id, r.started_at, coalesce(e.gpu_count, 0) as gpu_count, m.seq, m.benchmark, m.metric, m.value, m.unit, m.peak,
           m.peak_source, m.efficiency, m.statistic, cast(m.params as varchar) as params,
           m.benchmark || '/' || m.metric as key
    from measurements m
    join runs r using (run_id)
    join environments e using (environment_id)
    where list_contains($metrics, m.benchmark || '/' || m.metric)
      and (cast($as_of as timestamptz) is null or r.started_at <= cast($as_of as timestamptz))
),
newest as (
    select *, dense_rank() over (partition by target, key order by started_at desc, run_id desc) as k
    from m
),
final as (
    select target, key, run_id, seq, started_at, gpu_count, benchmark, metric, value, unit, peak, peak_source, efficiency,
           statistic, params
    from newest
    where k = 1
)
select * from final order by target, key, seq
