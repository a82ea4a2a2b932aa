-- cost_target_memory: GPU memory per target from its latest run's environment (for the tier memory fit).
with latest as (
    select r.target,
           arg_max(e.gpu_memory_gib, r.started_at) as gpu_memory_gib,
           arg_max(e.gpu_count, r.started_at) as env_gpu_count
    from runs r
    join environments e using (environment_id)
    group by r.target
),
final as (
    select l.target, l.gpu_memory_gib, greatest(coalesce(t.gpu_count, 0), coalesce(l.env_gpu_count, 0)) as gpu_count
    from latest l
    left join targets t using (target)
)
select * from final
