-- estimate_catalog: the instance types the warehouse knows a GPU for: each target's provider, region,
-- instance type, GPU (as configured, else its newest run's environment) and count; the fabric the probe's
-- interconnect fingerprint measured (environment.extra.fabric of the newest run that recorded one, issue 42);
-- and per target the fine-tune attempts ($preset's or every preset's; the view finetune_attempts says what counts).
with env as (
    select r.target, arg_max(e.gpu_name, r.started_at) as gpu_name, arg_max(e.gpu_count, r.started_at) as env_gpus,
           arg_max(json_extract_string(e.doc, '$.extra.fabric'), r.started_at)
               filter (where json_extract_string(e.doc, '$.extra.fabric') is not null) as measured_fabric
    from runs r
    join environments e using (environment_id)
    group by r.target
),
att as (
    select target, count(*) as attempts, count(*) filter (where failed) as failed_attempts
    from finetune_attempts
    where preset is null or preset = $preset
    group by target
),
final as (
    select t.target, t.provider, t.region, t.instance_type, coalesce(t.billing_mode, 'on_demand') as billing_mode,
           coalesce(t.gpu_model, env.gpu_name) as gpu_model,
           greatest(coalesce(t.gpu_count, 0), coalesce(env.env_gpus, 0), 1) as gpu_count,
           env.measured_fabric,
           coalesce(att.attempts, 0) as attempts, coalesce(att.failed_attempts, 0) as failed_attempts
    from targets t
    left join env using (target)
    left join att using (target)
    order by t.target
)
select * from final
