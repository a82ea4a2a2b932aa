-- well_used_hosts: per target, its newest run (started at or before $as_of, when given) and that run's
-- GPU count: a host without a GPU is "not measured" on every GPU rule of tasks/cost/well_used.py.
with ranked as (
    select r.target, r.run_id, r.started_at, e.gpu_count, e.gpu_name,
           row_number() over (partition by r.target order by r.started_at desc, r.run_id desc) as k
    from runs r
    join environments e using (environment_id)
    where cast($as_of as timestamptz) is null or r.started_at <= cast($as_of as timestamptz)
),
final as (
    select target, run_id, started_at, coalesce(gpu_count, 0) as gpu_count, gpu_name
    from ranked
    where k = 1
)
select * from final order by target
