-- Each target's environments, in the order they were first used, with how many runs used each.
with u as (
    select r.target, r.environment_id, min(r.started_at) as first_used_at, max(r.started_at) as last_used_at,
           count(*) as runs
    from runs r
    group by r.target, r.environment_id
),
final as (
    select u.*, e.gpu_name, e.gpu_count, e.driver, e.cuda_runtime, e.cudnn, e.torch, e.python, e.os,
           e.kernel, e.cpu_model, e.pcie_gen_current, e.pcie_width_current, e.power_limit_w,
           e.container_image
    from u
    join environments e using (environment_id)
)
select * from final order by target, first_used_at
